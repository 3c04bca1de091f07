// Command image builds dovetail's controller image without a container
// daemon: an OCI image index for linux/amd64 and linux/arm64, each image a
// single layer holding the static dovetail binary at /dovetail (with the
// Mozilla CA roots embedded through golang.org/x/crypto/x509roots/fallback),
// run as uid/gid 65532 with entrypoint ["/dovetail", "controller"] on an
// empty base: no shell, no libc, no other file. `make image` runs it.
//
//	go run ./hack/image -version 0.1.0 -out bin/image
//
// It writes an OCI image layout in -out (push it with
// `skopeo copy --all oci:bin/image docker://REPO:TAG` or
// `crane push --index bin/image REPO:TAG`) and the same layout as a tar
// archive next to it (-out + ".tar", an oci-archive). The layers are
// reproducible: file times are zero and the binaries are built with
// -trimpath.
//
// Must not: be imported; pull anything (base images cannot be pulled here).
package main
