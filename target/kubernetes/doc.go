// Package kubernetes is the target that runs a trial's workers on a
// Kubernetes cluster (target.kind: kubernetes): one Deployment per role
// (collocated, prefill, decode) in a fresh labelled namespace per trial or
// a given one, built from an engine template (image, command and args with
// the process target's {model} {port} {engine_args} {role} placeholders,
// env, resources including nvidia.com/gpu, node selector, tolerations,
// image pull secrets, volumes).
//
// Provisioning waits until every pod is Ready and answers /health and
// /v1/models with the spec's model, and turns what the API shows into
// typed failures at once rather than at the timeout: an unschedulable pod
// (naming the missing resource), an image that cannot be pulled (naming the
// image), a container that exits (its exit code and last log lines), an
// object the API refused (quota, admission). During the trial a pod that is
// deleted, restarts or stops being Ready is reported as a worker exit.
// Teardown deletes everything with foreground propagation; every object
// carries the trial label, so Cleanup removes what a killed run left.
//
// The hardware identity of a run comes from the nodes its pods ran on (the
// nvidia.com/gpu.product label and the GPUs each pod asked for).
//
// The router and driver run where autoinfer runs (runner mode local): pod
// IPs must be reachable from there, as they are from a Job inside the
// cluster.
package kubernetes
