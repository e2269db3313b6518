// Package calibrate fits the simulated engine's step model to a live
// OpenAI-compatible server: a designed probe (calibrate's Plan) drives the
// server with groups of concurrent streams whose step composition can be
// read back from the token arrival times, the steps are reconstructed
// (Steps), the step model's coefficients are fitted by least squares with
// their standard errors (Fit), and the fit is checked on probe groups it
// did not see by replaying them on the virtual clock (HeldOut). The result
// is a profile file (sim.ProfileFile) that states its own error.
package calibrate
