package policy

import (
	"bytes"
	"strings"
	"unsafe"
)

// radix is an approximate radix tree of request text with tenants (target
// IDs) on its nodes: a tenant on a node has recently been sent text that
// starts with the path to that node.
//
// Memory is what max_tree_size bounds, so the tree accounts for the bytes it
// actually holds (held): every node owns a private copy of its own edge text
// — never a substring of a request body, which would keep the whole body
// alive — plus its struct, child and entry slices and entries.
//
// Eviction is incremental. Every (node, tenant) pair is an entry on one
// least-recently-used list, newest first. Inserting text touches the path
// from the deepest node up to the root, so a node's entry for a tenant is
// always newer than the entries of its descendants for that tenant: the
// oldest entry on the list is always a leaf for its tenant, and removing it
// never leaves a child without its parent. Evicting one entry is O(1) (plus
// a scan of one node's short slices), so a request never waits behind a walk
// of the whole tree.
type radix struct {
	roots   map[string]*node   // one tree per model
	tenants map[string]*tenant // targets holding text, interned
	lru     entry              // sentinel: lru.next is the newest entry, lru.prev the oldest
	held    int                // bytes held by nodes and entries, the quantity max_tree_size bounds
}

// tenant is one target in the tree.
type tenant struct {
	id    string
	chars int // characters of text held (sum of its nodes' edge lengths)
	// epoch and cand mark the tenant as a candidate of the current Pick,
	// at index cand, without allocating a set per request.
	epoch uint64
	cand  int
}

// entry says that tenant t holds node n. prev is newer, next is older.
type entry struct {
	prev, next *entry
	n          *node
	t          *tenant
}

type node struct {
	edge    string // owned copy
	parent  *node
	keys    []byte  // first byte of each child's edge
	kids    []*node // children, parallel to keys
	entries []*entry
}

var (
	nodeSize  = int(unsafe.Sizeof(node{}))
	entrySize = int(unsafe.Sizeof(entry{}))
	ptrSize   = int(unsafe.Sizeof(uintptr(0)))
)

// footprint is the bytes n holds, entries included.
func (n *node) footprint() int {
	return nodeSize + len(n.edge) + cap(n.keys) + ptrSize*(cap(n.kids)+cap(n.entries)) + entrySize*len(n.entries)
}

func newRadix() *radix {
	t := &radix{roots: map[string]*node{}, tenants: map[string]*tenant{}}
	t.lru.prev, t.lru.next = &t.lru, &t.lru
	return t
}

// child returns n's child whose edge starts with b, or nil.
func (n *node) child(b byte) (int, *node) {
	if i := bytes.IndexByte(n.keys, b); i >= 0 {
		return i, n.kids[i]
	}
	return -1, nil
}

// match walks text down the model's tree and returns how many leading
// characters are held by at least one tenant marked with epoch, and the
// deepest node where that holds (nil for no match).
func (t *radix) match(model, text string, epoch uint64) (int, *node) {
	cur := t.roots[model]
	if cur == nil {
		return 0, nil
	}
	best, depth := 0, 0
	var holder *node
	for depth < len(text) {
		_, c := cur.child(text[depth])
		if c == nil || !c.heldBy(epoch) {
			break // descendants hold a subset of this node's tenants
		}
		k := commonPrefix(c.edge, text[depth:])
		best, holder = depth+k, c
		if k < len(c.edge) {
			break
		}
		depth += k
		cur = c
	}
	return best, holder
}

func (n *node) heldBy(epoch uint64) bool {
	for _, e := range n.entries {
		if e.t.epoch == epoch {
			return true
		}
	}
	return false
}

// insert records that the tenant id was sent text: it marks every node on
// text's path and makes those entries the newest.
func (t *radix) insert(model, text, id string) {
	if text == "" {
		return
	}
	cur := t.roots[model]
	if cur == nil {
		// A root's edge is its model name (never matched against).
		cur = &node{edge: strings.Clone(model)}
		t.roots[cur.edge] = cur
		t.held += cur.footprint()
	}
	for depth := 0; depth < len(text); {
		_, c := cur.child(text[depth])
		if c == nil {
			c = &node{edge: strings.Clone(text[depth:]), parent: cur}
			t.held -= cur.footprint()
			cur.keys, cur.kids = append(cur.keys, c.edge[0]), append(cur.kids, c)
			t.held += cur.footprint() + c.footprint()
		}
		k := commonPrefix(c.edge, text[depth:])
		if k < len(c.edge) {
			c = t.split(c, k)
		}
		depth += k
		cur = c
	}
	ten := t.tenants[id]
	if ten == nil {
		ten = &tenant{id: id}
		t.tenants[id] = ten
	}
	// Deepest first, so each ancestor ends up newer than its descendants.
	for n := cur; n.parent != nil; n = n.parent {
		t.touch(n, ten)
	}
}

// touch makes ten's entry on n the newest, creating it if needed.
func (t *radix) touch(n *node, ten *tenant) {
	for _, e := range n.entries {
		if e.t == ten {
			e.unlink()
			e.linkAfter(&t.lru)
			return
		}
	}
	e := &entry{n: n, t: ten}
	t.held -= n.footprint()
	n.entries = append(n.entries, e)
	t.held += n.footprint()
	ten.chars += len(n.edge)
	e.linkAfter(&t.lru)
}

// split cuts n's edge after k characters and returns the new upper node.
// The upper node gets an entry for each of n's tenants, placed just newer
// than n's own so the list order stays valid; characters per tenant are
// unchanged because the two edges add up to the old one.
func (t *radix) split(n *node, k int) *node {
	t.held -= n.footprint()
	up := &node{edge: strings.Clone(n.edge[:k]), parent: n.parent}
	i, _ := n.parent.child(n.edge[0])
	n.parent.kids[i] = up
	n.edge = strings.Clone(n.edge[k:])
	n.parent = up
	up.keys, up.kids = []byte{n.edge[0]}, []*node{n}
	up.entries = make([]*entry, len(n.entries))
	for j, e := range n.entries {
		ue := &entry{n: up, t: e.t}
		ue.linkAfter(e.prev)
		up.entries[j] = ue
	}
	t.held += n.footprint() + up.footprint()
	return up
}

// evictOldest removes the least recently used entry; it reports false when
// the tree is empty.
func (t *radix) evictOldest() bool {
	e := t.lru.prev
	if e == &t.lru {
		return false
	}
	t.remove(e)
	return true
}

// remove deletes entry e, which must be a leaf for its tenant, and its node
// once nobody holds it (it then has no children: a child's tenants are
// always on its parent).
func (t *radix) remove(e *entry) {
	n := e.n
	e.unlink()
	t.held -= n.footprint()
	for i, x := range n.entries {
		if x == e {
			last := len(n.entries) - 1
			n.entries[i], n.entries[last] = n.entries[last], nil
			n.entries = n.entries[:last]
			break
		}
	}
	e.t.chars -= len(n.edge)
	if e.t.chars == 0 {
		delete(t.tenants, e.t.id)
	}
	if len(n.entries) > 0 {
		t.held += n.footprint()
		return
	}
	p := n.parent
	t.held -= p.footprint()
	i, _ := p.child(n.edge[0])
	last := len(p.kids) - 1
	p.keys[i], p.kids[i] = p.keys[last], p.kids[last]
	p.kids[last] = nil
	p.keys, p.kids = p.keys[:last], p.kids[:last]
	t.held += p.footprint()
	n.parent = nil
	if p.parent == nil && len(p.kids) == 0 {
		// An empty model tree goes, so arbitrary model names cannot
		// accumulate roots.
		delete(t.roots, p.edge)
		t.held -= p.footprint()
	}
}

// forget removes every entry of the tenant id, leaves first.
func (t *radix) forget(id string) {
	ten := t.tenants[id]
	if ten == nil {
		return
	}
	var walk func(n *node)
	walk = func(n *node) {
		// Children are visited on a copy: removing a child's last entry
		// detaches it from n.kids.
		for _, c := range append([]*node(nil), n.kids...) {
			if c.entryOf(ten) != nil {
				walk(c)
			}
		}
		if e := n.entryOf(ten); e != nil {
			t.remove(e)
		}
	}
	for _, root := range t.roots {
		walk(root)
	}
}

func (n *node) entryOf(ten *tenant) *entry {
	for _, e := range n.entries {
		if e.t == ten {
			return e
		}
	}
	return nil
}

func (e *entry) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// linkAfter puts e just after (older than) at.
func (e *entry) linkAfter(at *entry) {
	e.prev, e.next = at, at.next
	at.next.prev = e
	at.next = e
}

// commonPrefix is the length of the longest common prefix of a and b. It
// compares 64-byte blocks first: prompts are long and mostly shared.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
