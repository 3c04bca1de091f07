package snapshot_test

import "time"

var timeNow = time.Now
