// Package offerings is the controller that publishes the offerings the
// controller holds unavailable (pkg/state/unavailable: refused for lack of
// capacity, for a TTL) to the ConfigMap dovetail-unavailable-offerings in
// the controller's namespace, so that read-only tools (`dovetail explain
// pod`) can name them. It writes when the cache's generation changes, and
// checks every Interval (10 s); the ConfigMap is a copy, never read back
// by the controller (a restart starts with an empty cache, as before).
//
// A singleton (pkg/controllers/singleton); time from the injected clock.
// RBAC: create configmaps, and get/update the one named
// dovetail-unavailable-offerings (config/rbac/role.yaml).
package offerings
