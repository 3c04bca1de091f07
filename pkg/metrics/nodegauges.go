package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// NodeGauges holds the per-node capacity gauges
// (karpenter_nodes_allocatable and karpenter_nodes_total_pod_requests) as
// a few numbers per node, and makes their series only when they are
// collected. A GaugeVec keeps every series' label pairs for good: with six
// labels and some ten series per node that was about 8 KB a node, 23 MB at
// 3,000 nodes; this keeps about 300 bytes a node.
//
// Allocatable and Requests are the two metrics' collectors (registered in
// the Registry); Set, Delete and DeleteNodePool change what both report.
type NodeGauges struct {
	// Allocatable collects karpenter_nodes_allocatable.
	Allocatable prometheus.Collector
	// Requests collects karpenter_nodes_total_pod_requests.
	Requests prometheus.Collector

	mu    sync.RWMutex
	nodes map[string]*nodeGauge
}

// NodeLabels are a node's label values after its name and the resource.
type NodeLabels struct {
	NodePool, CapacityType, InstanceType, Zone string
}

// NodeValue is one resource's value of a node (cpu in cores, memory in
// bytes, pods in pods).
type NodeValue struct {
	Resource string
	Value    float64
}

type nodeGauge struct {
	labels                NodeLabels
	allocatable, requests []NodeValue
}

func newNodeGauges(allocatable, requests prometheus.GaugeOpts, labels []string) *NodeGauges {
	g := &NodeGauges{nodes: map[string]*nodeGauge{}}
	desc := func(o prometheus.GaugeOpts) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.Namespace, o.Subsystem, o.Name), o.Help, labels, nil)
	}
	g.Allocatable = &nodeGaugeCollector{g: g, desc: desc(allocatable), pick: func(n *nodeGauge) []NodeValue { return n.allocatable }}
	g.Requests = &nodeGaugeCollector{g: g, desc: desc(requests), pick: func(n *nodeGauge) []NodeValue { return n.requests }}
	return g
}

// Set replaces what node reports: its labels, allocatable and pod
// requests (one series per value). The slices are kept; the caller must
// not change them afterwards.
func (g *NodeGauges) Set(node string, labels NodeLabels, allocatable, requests []NodeValue) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes[node] = &nodeGauge{labels: labels, allocatable: allocatable, requests: requests}
}

// Delete drops node's series.
func (g *NodeGauges) Delete(node string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.nodes, node)
}

// DeleteNodePool drops the series of every node of pool.
func (g *NodeGauges) DeleteNodePool(pool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, n := range g.nodes {
		if n.labels.NodePool == pool {
			delete(g.nodes, name)
		}
	}
}

// Len is the number of nodes with series.
func (g *NodeGauges) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// nodeGaugeCollector collects one of the two metrics of a NodeGauges.
type nodeGaugeCollector struct {
	g    *NodeGauges
	desc *prometheus.Desc
	pick func(*nodeGauge) []NodeValue
}

func (c *nodeGaugeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *nodeGaugeCollector) Collect(ch chan<- prometheus.Metric) {
	c.g.mu.RLock()
	defer c.g.mu.RUnlock()
	for name, n := range c.g.nodes {
		l := n.labels
		for _, v := range c.pick(n) {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v.Value,
				name, l.NodePool, v.Resource, l.CapacityType, l.InstanceType, l.Zone)
		}
	}
}
