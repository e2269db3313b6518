// Package arrival turns an arrival process (gamma/Poisson, constant, inf,
// closed loop) into intended send offsets. Offsets are a pure function of
// the Arrival and the random source, so a schedule can be tested without
// real time and reproduced byte for byte.
package arrival
