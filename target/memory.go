package target

// InProcessWorkers is Options whose workers run inside autoinfer's own
// process (simulated engines): their memory is autoinfer's, so trial run
// adds it to a trial's estimate before refusing a trial that would not fit
// the machine. Real servers are out of that estimate's reach.
type InProcessWorkers interface {
	Options
	// WorkerMemory is the most heap the workers of topo hold for their
	// bookkeeping before any request arrives.
	WorkerMemory(topo Topology) (int64, error)
	// RequestMemory is the most heap one request of tokens (prompt and
	// output) holds inside a worker.
	RequestMemory(tokens int) int64
}
