// Package virtual runs a sim-target trial in virtual time (trial run
// --clock virtual): the driver's request stream (driver.Simulate), the
// router's own decision code (router.Router.Route: policy objects, load
// accounting, the cache_aware tree, the PD threshold and both PD picks) and
// the simulated engines' real schedulers (sim.Fleet), all on one
// discrete-event clock in one goroutine, with no HTTP, no timers and no
// goroutine per request. docs/whatif.md describes the model and what it
// leaves out.
package virtual
