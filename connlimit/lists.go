package connlimit

import "container/heap"

// Which of a connection's links a list threads through.
const (
	allIdle = iota
	peerIdle
	allConns
)

// Which of a connection's slots a heap threads through.
const (
	byRate = iota
	byQuiet
)

// A connList is a doubly linked list threaded through the connections' links[k].
type connList struct {
	front, back *conn
	k           int
}

func (l *connList) pushBack(c *conn) {
	lk := &c.links[l.k]
	lk.prev, lk.next = l.back, nil
	if l.back != nil {
		l.back.links[l.k].next = c
	} else {
		l.front = c
	}
	l.back = c
}

func (l *connList) remove(c *conn) {
	lk := &c.links[l.k]
	if lk.prev != nil {
		lk.prev.links[l.k].next = lk.next
	} else {
		l.front = lk.next
	}
	if lk.next != nil {
		lk.next.links[l.k].prev = lk.prev
	} else {
		l.back = lk.prev
	}
	lk.prev, lk.next = nil, nil
}

// A slot is a connection's place in a dueHeap: its index, and its due.
type slot struct {
	i   int
	due int64
}

// A dueHeap is a min-heap of receiving connections by due (Unix ns),
// threaded through their slots[k]. A due only grows, so the heap keeps a
// lower bound and updates it when the connection comes to the top.
type dueHeap struct {
	cs  []*conn
	k   int
	due func(*conn) int64
}

func (h *dueHeap) first() (*conn, int64) {
	for len(h.cs) > 0 {
		c := h.cs[0]
		due := h.due(c)
		if due <= c.slots[h.k].due {
			return c, due
		}
		c.slots[h.k].due = due
		heap.Fix(h, 0)
	}
	return nil, 0
}

func (h *dueHeap) push(c *conn) {
	c.slots[h.k].due = h.due(c)
	heap.Push(h, c)
}

func (h *dueHeap) remove(c *conn) { heap.Remove(h, c.slots[h.k].i) }

func (h *dueHeap) Len() int           { return len(h.cs) }
func (h *dueHeap) Less(i, j int) bool { return h.cs[i].slots[h.k].due < h.cs[j].slots[h.k].due }
func (h *dueHeap) Swap(i, j int) {
	h.cs[i], h.cs[j] = h.cs[j], h.cs[i]
	h.cs[i].slots[h.k].i, h.cs[j].slots[h.k].i = i, j
}
func (h *dueHeap) Push(x any) {
	c := x.(*conn)
	c.slots[h.k].i = len(h.cs)
	h.cs = append(h.cs, c)
}
func (h *dueHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs[len(h.cs)-1] = nil
	h.cs = h.cs[:len(h.cs)-1]
	return c
}
