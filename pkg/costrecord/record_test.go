package costrecord_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/costrecord"
)

var t0 = time.Date(2026, 12, 1, 9, 40, 0, 0, time.UTC)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestAccrueSplitsHours: 0.12 $/h on-demand and 0.04 $/h spot from 09:40
// to 11:10 put 20 minutes in the 09 bucket, 60 in 10 and 10 in 11.
func TestAccrueSplitsHours(t *testing.T) {
	r := &costrecord.Record{}
	us := []costrecord.Usage{
		{Pool: "web", Labels: map[string]string{"team": "a"}, PricePerHour: 0.12, From: t0.Add(-time.Hour)},
		{Pool: "batch", Labels: map[string]string{"team": "b"}, PricePerHour: 0.04, Spot: true, From: t0.Add(30 * time.Minute)},
	}
	r.Accrue(us, t0) // first write: starts the record, no history
	if len(r.Hours) != 0 || !r.Through.Equal(t0) {
		t.Fatalf("first accrue made %d hours, through %v", len(r.Hours), r.Through)
	}
	r.Accrue(us, t0.Add(50*time.Minute))
	r.Accrue(us, t0.Add(90*time.Minute))
	if len(r.Hours) != 3 {
		t.Fatalf("%d hours, want 3 (09, 10, 11)", len(r.Hours))
	}
	tot := r.Since(t0.Add(-24 * time.Hour))
	byPool := map[string]costrecord.Total{}
	for _, x := range tot {
		byPool[x.Key.Pool] = x
	}
	// web: 90 minutes at 0.12; batch: from 10:10 to 11:10 at 0.04, spot.
	if w := byPool["web"]; !near(w.Dollars, 0.18) || w.Spot != 0 || !near(w.NodeHours, 1.5) {
		t.Errorf("web = %+v; want $0.18, 1.5 node-hours", w)
	}
	if b := byPool["batch"]; !near(b.Dollars, 0.04) || !near(b.Spot, 0.04) || !near(b.NodeHours, 1) {
		t.Errorf("batch = %+v; want $0.04 all spot, 1 node-hour", b)
	}
	// The 09:00 hour holds web's 20 minutes only.
	first := r.Hours[0]
	if len(first.Cells) != 1 || !near(first.Cells[0].Dollars, 0.04) {
		t.Errorf("09:00 hour = %+v; want web's 20 minutes ($0.04)", first)
	}
	// Only the 11:00 hour ends after 11:05.
	if got := r.Since(t0.Add(85 * time.Minute)); !near(got[0].Dollars+got[1].Dollars, 0.02+0.04/6) {
		t.Errorf("since 11:05: %+v", got)
	}
}

// TestEncodeRoundTripAndLimits: a month of 20 pools fits whole under
// MaxBytes; 120 pools are trimmed from the oldest hour and still fit;
// hours beyond Retention go.
func TestEncodeRoundTripAndLimits(t *testing.T) {
	build := func(pools int) *costrecord.Record {
		r := &costrecord.Record{}
		var us []costrecord.Usage
		for i := range pools {
			us = append(us, costrecord.Usage{Pool: fmt.Sprintf("pool-%03d", i), Labels: map[string]string{"team": fmt.Sprintf("team-%d", i%7)},
				PricePerHour: 0.0416 + float64(i)*0.013, Spot: i%2 == 0, From: t0.Add(-40 * 24 * time.Hour)})
		}
		start := t0.Add(-31 * 24 * time.Hour).Truncate(time.Hour)
		r.Accrue(us, start)
		for h := 1; h <= 31*24; h++ {
			r.Accrue(us, start.Add(time.Duration(h)*time.Hour))
		}
		return r
	}
	now := t0.Truncate(time.Hour)
	r := build(20)
	data, err := r.Encode(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > costrecord.MaxBytes || len(r.Hours) != 31*24 {
		t.Errorf("20 pools: %d bytes, %d hours; want <= %d bytes and all %d hours", len(data), len(r.Hours), costrecord.MaxBytes, 31*24)
	}
	t.Logf("20 pools x 31 days: %d bytes", len(data))
	back, err := costrecord.Decode(data, now)
	if err != nil {
		t.Fatal(err)
	}
	a, b := r.Since(now.Add(-48*time.Hour)), back.Since(now.Add(-48*time.Hour))
	for i := range a {
		if !near(a[i].Dollars, b[i].Dollars) || a[i].Key.Pool != b[i].Key.Pool {
			t.Fatalf("round trip: %+v != %+v", a[i], b[i])
		}
	}

	big := build(120)
	data, err = big.Encode(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > costrecord.MaxBytes || len(big.Hours) >= 31*24 || big.Hours[len(big.Hours)-1].Start != now.Add(-time.Hour).Unix() {
		t.Errorf("120 pools: %d bytes, %d hours, newest %d; want trimmed from the oldest under %d bytes", len(data), len(big.Hours), big.Hours[len(big.Hours)-1].Start, costrecord.MaxBytes)
	}
	t.Logf("120 pools: %d bytes, %d hours kept", len(data), len(big.Hours))

	// Retention: 2 days later the first 48 hours are gone.
	r.Encode(now.Add(48 * time.Hour))
	if len(r.Hours) != 31*24-48 {
		t.Errorf("after 48h more: %d hours, want %d", len(r.Hours), 31*24-48)
	}
}

func TestDecodeErrors(t *testing.T) {
	now := time.Date(2026, 12, 4, 6, 30, 0, 0, time.UTC)
	for _, in := range []string{`{`, `{"v":2}`, `{"v":1,"keys":[],"hours":[{"h":0,"c":[[3,1,0,1]]}]}`, `{"v":1,"hours":[{"h":0,"c":[[0,1]]}]}`,
		// issue 34 item 6: numbers beyond any fleet, negative, spot above
		// the dollars, hours in the future or off the hour, a record
		// written in the future.
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":3600,"c":[[0,1.7e308,0,1]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":3600,"c":[[0,-1e308,0,1]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":3600,"c":[[0,1,0,-1]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":3600,"c":[[0,1,2,1]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":3600,"c":[[0,1,0,1e300]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":253402297200,"c":[[0,1,0,1]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":3601,"c":[[0,1,0,1]]}]}`,
		`{"v":1,"keys":[{"pool":"a"}],"hours":[{"h":7200,"c":[]},{"h":3600,"c":[]}]}`,
		`{"v":1,"through":"9999-01-01T00:00:00Z","keys":[],"hours":[]}`,
	} {
		_, err := costrecord.Decode([]byte(in), now)
		var ce *costrecord.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("Decode(%s) = %v, want a CorruptError", in, err)
		}
	}
	ok := `{"v":1,"through":"2026-12-04T06:29:00Z","keys":[{"pool":"a"}],"hours":[{"h":1764824400,"c":[[0,0.5,0.25,2]]}]}`
	if _, err := costrecord.Decode([]byte(ok), now); err != nil {
		t.Errorf("Decode(%s): %v", ok, err)
	}
}

// TestAccrueSkipsImpossiblePrices: a usage priced NaN, infinite or above
// MaxPricePerHour (a corrupt annotation) adds nothing, so what Encode
// writes always decodes.
func TestAccrueSkipsImpossiblePrices(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	r := &costrecord.Record{}
	r.Accrue(nil, t0)
	var us []costrecord.Usage
	for _, p := range []float64{math.NaN(), math.Inf(1), 1.7e308, 2 * costrecord.MaxPricePerHour, 0.5} {
		us = append(us, costrecord.Usage{Pool: "a", PricePerHour: p, From: t0})
	}
	r.Accrue(us, t0.Add(3*time.Hour))
	data, err := r.Encode(t0.Add(3 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	back, err := costrecord.Decode(data, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if tot := back.Since(t0); len(tot) != 1 || !near(tot[0].Dollars, 1.5) {
		t.Errorf("totals %+v, want $1.5 from the one sane usage", tot)
	}
}
