package batcher_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/batcher"
)

// ExampleBatcher sums requests that arrive together: three concurrent
// callers make one Exec call.
func ExampleBatcher() {
	b := batcher.New(context.Background(), batcher.Options[int, int]{
		IdleWindow: 20 * time.Millisecond,
		MaxItems:   3,
		Exec: func(_ context.Context, ins []int) []batcher.Result[int] {
			out := make([]batcher.Result[int], len(ins))
			for i, in := range ins {
				out[i].Out = in * in
			}
			return out
		},
	})
	var wg sync.WaitGroup
	results := make([]int, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = b.Add(context.Background(), i+1)
		}()
	}
	wg.Wait()
	fmt.Println(results, b.Calls())
	// Output: [1 4 9] 1
}
