// Package scrape reads Prometheus text exposition from a /metrics URL (a
// router's or a worker's) and answers the few questions a trial asks of it:
// a counter's total, its values by one label.
package scrape
