//go:build !unix

package bound

import "time"

func processCPU() time.Duration { return 0 }
