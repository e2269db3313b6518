// Package adapter runs one trial's lifecycle: provision workers, launch a
// fresh router, warm it, drive the measured workload, gate quality, scrape
// metrics, classify failures, write the ledger row and tear everything down,
// also on error and on interrupt.
package adapter
