package provisioning

// Extensions reports how many times b extended an open window.
func Extensions(b *Batcher) int64 { return b.extended.Load() }
