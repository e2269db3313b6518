// Package stale decides which earlier ledger rows a new trial invalidates,
// and says why.
//
// The rule (Marks): when an ok trial is recorded whose engine config equals
// earlier rows' but whose router config differs, those earlier rows are
// stale, with a reason naming every changed router setting by dotted path
// ("router.policy: round_robin→cache_aware; router.cache_threshold:
// (unset)→0.3"). Addresses that change on every trial (host, port, worker
// URLs) are not part of a router's identity and never make a difference.
// Rows measured without a router are never stale and never make others
// stale: no router setting could have changed under them. Identical configs
// never mark anything, and a row once stale keeps its first reason. Rows
// of one sweep (equal, non-empty SweepID) never mark each other: the sweep
// is a deliberate side-by-side comparison. Replicates of one repeated
// trial (equal, non-empty ReplicateGroup) never mark each other: they are
// one trial measured several times, whatever their seeds.
//
// The ledger calls Marks inside the transaction that records the new row,
// so the row and the marks it causes land together or not at all.
package stale
