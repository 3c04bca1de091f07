package rbac

import (
	"bytes"
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.yaml
var files embed.FS

// Manifests returns the YAML files joined into one multi-document stream,
// in file-name order, ready for `kubectl apply -f -`.
func Manifests() []byte {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		data, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		b.WriteString("---\n")
		b.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}
