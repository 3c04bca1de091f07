// Package rbac embeds the controller's RBAC manifests (the YAML files of
// this directory: ServiceAccount, ClusterRole, Role and their bindings), so
// that tools built from this module, such as `dovetail local up`, apply
// exactly what is checked in without needing the source tree.
package rbac
