package gold

// pageBits sizes the pages of a paged column: 16k slots, 128 KiB of counts or 640 KiB of
// exact sums, small beside a state of a million groups and large enough that the page
// table stays in cache.
const (
	pageBits = 14
	pageSize = 1 << pageBits
	pageMask = pageSize - 1
)

// paged is a column of T indexed by group slot, kept in fixed-size pages. An aggregate's
// state grows one slot at a time as groups open; kept in one slice grown by append, it was
// copied about four times its final size on the way (Go grows large slices by 1.25x) and held
// the old and the new array at once at each step, the moment the stream's heap peaks. Pages
// are never copied or moved: growing adds a zeroed page, and a slot's address stays put.
type paged[T any] struct {
	pages [][]T
	n     int // slots in use: at(s) is valid for s < n
}

// at is slot s's element (s < len).
func (p *paged[T]) at(s int32) *T { return &p.pages[s>>pageBits][s&pageMask] }

// grow makes slots [0, n) valid; new slots are zero. The first page grows as a slice does
// (by a quarter) until it is full, so a small state (a few thousand groups) keeps a small footprint.
func (p *paged[T]) grow(n int) {
	if n <= p.n {
		return
	}
	if len(p.pages) == 0 {
		p.pages = [][]T{nil}
	}
	if first := p.pages[0]; len(first) < min(n, pageSize) {
		grown := make([]T, min(pageSize, max(n, len(first)+len(first)/4, 64)))
		copy(grown, first)
		p.pages[0] = grown
	}
	for len(p.pages)<<pageBits < n {
		p.pages = append(p.pages, make([]T, pageSize))
	}
	p.n = n
}

// bytes is the memory the pages and the page table take.
func (p *paged[T]) bytes() int64 {
	n := sliceBytes(p.pages)
	for _, pg := range p.pages {
		n += sliceBytes(pg)
	}
	return n
}
