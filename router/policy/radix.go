package policy

import "container/heap"

// radix is an approximate radix tree of request text with tenants (target
// IDs) on its nodes: a tenant on a node has recently been sent text that
// starts with the path to that node. A tenant on a node is always on the
// node's parent too, because insertion marks the whole path and eviction
// removes a tenant only where no child still holds it.
type radix struct {
	roots map[string]*node // one tree per model
	sizes map[string]int   // characters held per tenant, summed over all trees
	total int
}

type node struct {
	edge     string
	parent   *node
	children map[byte]*node
	tenants  map[string]uint64 // tenant → logical time of last use
}

func newRadix() *radix {
	return &radix{roots: map[string]*node{}, sizes: map[string]int{}}
}

func newNode(edge string, parent *node) *node {
	return &node{edge: edge, parent: parent, children: map[byte]*node{}, tenants: map[string]uint64{}}
}

// match walks text down the model's tree and returns how many leading
// characters are held by at least one allowed tenant, and those tenants.
func (t *radix) match(model, text string, allowed map[string]bool) (int, []string) {
	cur := t.roots[model]
	if cur == nil {
		return 0, nil
	}
	best, depth := 0, 0
	var holders []string
	for depth < len(text) {
		child := cur.children[text[depth]]
		if child == nil {
			break
		}
		k := commonPrefix(child.edge, text[depth:])
		var hs []string
		for id := range child.tenants {
			if allowed[id] {
				hs = append(hs, id)
			}
		}
		if len(hs) == 0 {
			break // descendants hold a subset of this node's tenants
		}
		best, holders = depth+k, hs
		if k < len(child.edge) {
			break
		}
		depth += k
		cur = child
	}
	return best, holders
}

// insert records that tenant was sent text, at logical time now.
func (t *radix) insert(model, text, tenant string, now uint64) {
	cur := t.roots[model]
	if cur == nil {
		cur = newNode("", nil)
		t.roots[model] = cur
	}
	for depth := 0; depth < len(text); {
		child := cur.children[text[depth]]
		if child == nil {
			child = newNode(text[depth:], cur)
			cur.children[text[depth]] = child
		}
		k := commonPrefix(child.edge, text[depth:])
		if k < len(child.edge) {
			child = split(child, k)
		}
		t.mark(child, tenant, now)
		depth += k
		cur = child
	}
}

func (t *radix) mark(n *node, tenant string, now uint64) {
	if _, ok := n.tenants[tenant]; !ok {
		t.sizes[tenant] += len(n.edge)
		t.total += len(n.edge)
	}
	n.tenants[tenant] = now
}

// split cuts n's edge after k characters and returns the new upper node,
// which inherits n's tenants (sizes are unchanged: the edge lengths add up).
func split(n *node, k int) *node {
	upper := newNode(n.edge[:k], n.parent)
	for id, ts := range n.tenants {
		upper.tenants[id] = ts
	}
	n.parent.children[n.edge[0]] = upper
	n.edge = n.edge[k:]
	n.parent = upper
	upper.children[n.edge[0]] = n
	return upper
}

// unmark removes tenant from n and deletes n once nobody holds it.
func (t *radix) unmark(n *node, tenant string) {
	if _, ok := n.tenants[tenant]; !ok {
		return
	}
	delete(n.tenants, tenant)
	t.sizes[tenant] -= len(n.edge)
	t.total -= len(n.edge)
	if t.sizes[tenant] == 0 {
		delete(t.sizes, tenant)
	}
	if len(n.tenants) == 0 && n.parent != nil {
		delete(n.parent.children, n.edge[0])
	}
}

// forget removes tenant from every tree.
func (t *radix) forget(tenant string) {
	var walk func(n *node)
	walk = func(n *node) {
		for _, c := range n.children {
			if _, ok := c.tenants[tenant]; ok {
				walk(c)
			}
		}
		if n.parent != nil {
			t.unmark(n, tenant)
		}
	}
	for _, root := range t.roots {
		walk(root)
	}
}

// evict removes least-recently-used tenant leaves until the total size over
// all tenants and models is at most limit. Capping the total (not each
// tenant) keeps memory independent of the worker count.
func (t *radix) evict(limit int) {
	if t.total <= limit {
		return
	}
	var h leafHeap
	var collect func(n *node)
	collect = func(n *node) {
		for _, c := range n.children {
			collect(c)
		}
		if n.parent == nil {
			return
		}
		for id, ts := range n.tenants {
			if !heldBelow(n, id) {
				h = append(h, leaf{n, id, ts})
			}
		}
	}
	for _, root := range t.roots {
		collect(root)
	}
	heap.Init(&h)
	for t.total > limit && h.Len() > 0 {
		l := heap.Pop(&h).(leaf)
		parent := l.n.parent
		t.unmark(l.n, l.tenant)
		if parent.parent != nil && !heldBelow(parent, l.tenant) {
			if ts, ok := parent.tenants[l.tenant]; ok {
				heap.Push(&h, leaf{parent, l.tenant, ts})
			}
		}
	}
}

func heldBelow(n *node, tenant string) bool {
	for _, c := range n.children {
		if _, ok := c.tenants[tenant]; ok {
			return true
		}
	}
	return false
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

type leaf struct {
	n      *node
	tenant string
	ts     uint64
}

type leafHeap []leaf

func (h leafHeap) Len() int           { return len(h) }
func (h leafHeap) Less(i, j int) bool { return h[i].ts < h[j].ts }
func (h leafHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *leafHeap) Push(x any)        { *h = append(*h, x.(leaf)) }
func (h *leafHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
