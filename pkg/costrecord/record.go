package costrecord

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Where the record lives and its limits.
const (
	// ConfigMapName is the ConfigMap in the controller's namespace.
	ConfigMapName = "dovetail-cost"
	// DataKey is the ConfigMap key holding the encoded record.
	DataKey = "record.json"
	// Retention is how long hours are kept.
	Retention = 31 * 24 * time.Hour
	// MaxBytes bounds the encoded record (a ConfigMap holds 1 MiB).
	MaxBytes = 900 << 10
	// Version of the encoding.
	Version = 1
	// MaxPricePerHour bounds one node's price: Accrue skips a usage priced
	// above it (a corrupt annotation), and Decode refuses a cell that could
	// only come from one.
	MaxPricePerHour = 1e6
	// MaxCellDollars and MaxCellNodeHours bound one key's hour (a million
	// nodes at MaxPricePerHour would be far beyond them): the sums over the
	// 744 hours kept stay finite.
	MaxCellDollars   = 1e9
	MaxCellNodeHours = 1e6
	// clockSkew is how far ahead of the reader's clock the record may run.
	clockSkew = time.Hour
)

// Key identifies what a bucket is for: a NodePool and its labels when the
// cost was accrued.
type Key struct {
	Pool   string            `json:"pool"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Cell is one key's cost in one hour. It encodes as [key, dollars,
// spotDollars, nodeHours] to keep the record small.
type Cell struct {
	Key       int
	Dollars   float64
	Spot      float64
	NodeHours float64
}

// MarshalJSON encodes the cell as an array with rounded numbers.
func (c Cell) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{c.Key, round(c.Dollars), round(c.Spot), round(c.NodeHours)})
}

// UnmarshalJSON decodes the array form.
func (c *Cell) UnmarshalJSON(b []byte) error {
	var a []float64
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 4 || a[0] < 0 || a[0] != math.Trunc(a[0]) {
		return fmt.Errorf("a cell is [key, dollars, spotDollars, nodeHours], got %v", a)
	}
	*c = Cell{Key: int(a[0]), Dollars: a[1], Spot: a[2], NodeHours: a[3]}
	return nil
}

func round(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// Hour is one hour's cells; Start is the hour's first second (Unix).
type Hour struct {
	Start int64  `json:"h"`
	Cells []Cell `json:"c"`
}

// Record is the whole cost record.
type Record struct {
	Version int `json:"v"`
	// Through is the instant up to which cost has been accrued.
	Through time.Time `json:"through"`
	Keys    []Key     `json:"keys"`
	Hours   []Hour    `json:"hours"`
}

// Usage is one running NodeClaim, as Accrue counts it.
type Usage struct {
	Pool         string
	Labels       map[string]string
	PricePerHour float64
	Spot         bool
	// From is when it started to cost (its launch).
	From time.Time
}

// Accrue adds the cost of usages from max(Through, From) to now, split at
// hour boundaries, and moves Through to now. A record that has never
// accrued starts at now (no history is invented). now before Through does
// nothing.
func (r *Record) Accrue(usages []Usage, now time.Time) {
	r.Version = Version
	now = now.UTC()
	if r.Through.IsZero() {
		r.Through = now
		return
	}
	if !now.After(r.Through) {
		return
	}
	for _, u := range usages {
		if !(u.PricePerHour > 0 && u.PricePerHour <= MaxPricePerHour) { // NaN fails both
			continue
		}
		from := u.From.UTC()
		if from.Before(r.Through) {
			from = r.Through
		}
		k := r.key(u.Pool, u.Labels)
		for t := from; t.Before(now); {
			hourStart := t.Truncate(time.Hour)
			end := hourStart.Add(time.Hour)
			if end.After(now) {
				end = now
			}
			h := end.Sub(t).Hours()
			c := r.cell(hourStart.Unix(), k)
			c.Dollars += h * u.PricePerHour
			c.NodeHours += h
			if u.Spot {
				c.Spot += h * u.PricePerHour
			}
			t = end
		}
	}
	r.Through = now
}

func (r *Record) key(pool string, labels map[string]string) int {
	for i, k := range r.Keys {
		if k.Pool == pool && maps.Equal(k.Labels, labels) {
			return i
		}
	}
	r.Keys = append(r.Keys, Key{Pool: pool, Labels: maps.Clone(labels)})
	return len(r.Keys) - 1
}

func (r *Record) cell(start int64, key int) *Cell {
	i, found := slices.BinarySearchFunc(r.Hours, start, func(h Hour, s int64) int { return cmp.Compare(h.Start, s) })
	if !found {
		r.Hours = slices.Insert(r.Hours, i, Hour{Start: start})
	}
	h := &r.Hours[i]
	for j := range h.Cells {
		if h.Cells[j].Key == key {
			return &h.Cells[j]
		}
	}
	h.Cells = append(h.Cells, Cell{Key: key})
	return &h.Cells[len(h.Cells)-1]
}

// Prune drops hours that ended before now - Retention, and keys no hour
// uses any more (renumbering the cells).
func (r *Record) Prune(now time.Time) {
	cut := now.Add(-Retention).Unix()
	r.Hours = slices.DeleteFunc(r.Hours, func(h Hour) bool { return h.Start+3600 <= cut })
	r.compactKeys()
}

func (r *Record) compactKeys() {
	used := make([]bool, len(r.Keys))
	for _, h := range r.Hours {
		for _, c := range h.Cells {
			if c.Key < len(used) {
				used[c.Key] = true
			}
		}
	}
	remap := make([]int, len(r.Keys))
	var keys []Key
	for i, k := range r.Keys {
		if used[i] {
			remap[i] = len(keys)
			keys = append(keys, k)
		}
	}
	for hi := range r.Hours {
		for ci := range r.Hours[hi].Cells {
			c := &r.Hours[hi].Cells[ci]
			c.Key = remap[c.Key]
		}
	}
	r.Keys = keys
}

// Encode prunes to Retention and returns the JSON, dropping the oldest
// hours until it fits MaxBytes.
func (r *Record) Encode(now time.Time) ([]byte, error) {
	r.Prune(now)
	for {
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if len(data) <= MaxBytes || len(r.Hours) <= 1 {
			return data, nil
		}
		drop := max(1, len(r.Hours)/20)
		r.Hours = slices.Delete(r.Hours, 0, drop)
		r.compactKeys()
	}
}

// CorruptError is a record that does not parse or holds values no
// controller writes: a reader says "corrupt", never "not found".
type CorruptError struct{ Reason string }

func (e *CorruptError) Error() string { return "the cost record is corrupt: " + e.Reason }

// Decode parses an encoded record as read at now and checks it: version,
// cell keys, every number finite, non-negative and within MaxCellDollars
// and MaxCellNodeHours (spot dollars at most the dollars), hours on hour
// boundaries, ascending, none starting after now and Through at most an
// hour after now (an hour dated 9999 is refused, not counted as
// recent). Every refusal is a *CorruptError.
func Decode(data []byte, now time.Time) (*Record, error) {
	corrupt := func(format string, args ...any) (*Record, error) {
		return nil, &CorruptError{Reason: fmt.Sprintf(format, args...)}
	}
	r := &Record{}
	if err := json.Unmarshal(data, r); err != nil {
		return corrupt("it does not parse: %v", err)
	}
	if r.Version != Version {
		return corrupt("it has version %d; this dovetail reads version %d", r.Version, Version)
	}
	if r.Through.After(now.Add(clockSkew)) {
		return corrupt("it was written through %s, after now (%s)", r.Through.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	prev := int64(math.MinInt64)
	for _, h := range r.Hours {
		if h.Start%3600 != 0 || h.Start <= prev || h.Start > now.Unix() {
			return corrupt("hour %d is not an hour's start after the one before it and not after now", h.Start)
		}
		prev = h.Start
		for _, c := range h.Cells {
			if c.Key >= len(r.Keys) {
				return corrupt("hour %d names key %d of %d", h.Start, c.Key, len(r.Keys))
			}
			if !within(c.Dollars, MaxCellDollars) || !within(c.Spot, c.Dollars+1e-6) || !within(c.NodeHours, MaxCellNodeHours) {
				return corrupt("hour %d holds [%v %v %v] for key %d: dollars, spot dollars and node-hours must be finite, non-negative, at most %g, the dollars and %g", h.Start, c.Dollars, c.Spot, c.NodeHours, c.Key, MaxCellDollars, MaxCellNodeHours)
			}
		}
	}
	return r, nil
}

// within reports 0 <= v <= limit (false for NaN).
func within(v, limit float64) bool { return v >= 0 && v <= limit }

// Total is a key's cost over a window.
type Total struct {
	Key       Key     `json:"key"`
	Dollars   float64 `json:"dollars"`
	Spot      float64 `json:"spotDollars"`
	NodeHours float64 `json:"nodeHours"`
}

// Since sums the hours that end after since (an hour that straddles since
// counts whole), per key, in key order.
func (r *Record) Since(since time.Time) []Total {
	out := make([]Total, len(r.Keys))
	for i, k := range r.Keys {
		out[i].Key = k
	}
	s := since.Unix()
	for _, h := range r.Hours {
		if h.Start+3600 <= s {
			continue
		}
		for _, c := range h.Cells {
			t := &out[c.Key]
			t.Dollars += c.Dollars
			t.Spot += c.Spot
			t.NodeHours += c.NodeHours
		}
	}
	return out
}

// Series returns, per hour since since, the cells of each hour: for
// charts.
func (r *Record) Series(since time.Time) []Hour {
	s := since.Unix()
	var out []Hour
	for _, h := range r.Hours {
		if h.Start+3600 > s {
			out = append(out, h)
		}
	}
	return out
}
