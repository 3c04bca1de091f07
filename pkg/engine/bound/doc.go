// Package bound proves a lower bound on the cost of any node plan for a set
// of pending pods: the number the scheduling engine prints next to its
// plan's $/h, so that users (and tests) see how close to the cheapest the
// plan is. The bound is the optimum of a strengthened linear relaxation,
// computed by column generation and proven from a dual solution, so that it
// is never above the cost of any feasible integral plan, whatever the
// arithmetic or the iteration budget did.
//
// It is pure: no clock, no randomness, no I/O. Solve does not modify its
// input. See ExampleSolve.
//
// # Vocabulary
//
//   - Offering o: a node shape (instance type, zone, capacity type) with
//     price p_o ($/h), allocatable A_o (cpu millicores, memory bytes, pod
//     slots, net of daemonset overhead) and zone z(o).
//   - Group g: C_g identical pods with request R_g, allowed offerings O_g,
//     zone minimums M_gz (pods that must run in zone z) and a number D_g of
//     pods that need pairwise-distinct nodes.
//   - Plan: whole nodes of offerings, each holding pods whose summed requests
//     fit its allocatable, every pod on an allowed offering, every zone
//     minimum met, and, for every g, at least D_g nodes hosting pods of g.
//   - Column (node load): one node of one offering with a fractional number
//     of pods per group. Master: the LP over columns. Pricing: finding the
//     most valuable load of one node at given dual prices.
//
// # The relaxation
//
// Variables n_o >= 0 (nodes of offering o), x_go >= 0 (pods of g on o, for
// o in O_g) and y_go >= 0 (nodes of o that host g):
//
//	minimise  sum_o p_o n_o
//	(D)  sum_o x_go                >= C_g        every group
//	(Z)  sum_{o: z(o)=z} x_go      >= M_gz       every zone minimum
//	(R)  sum_g R_g[r] x_go         <= A_o[r] n_o every offering, resource
//	(C)  x_go                      <= m_go n_o   every group, offering
//	(P)  y_go <= n_o,  y_go <= x_go,  sum_o y_go >= k_g
//
// An integral plan is a solution with n_o its nodes of o, x_go its pods of g
// on them and y_go its nodes of o hosting g, so the LP optimum is a lower
// bound. (R) is plain capacity; (C) and (P) are the strengthening, valid
// because they hold for every plan:
//
//   - Pod caps. m_go = min(cap_g, min_r floor(A_o[r]/R_g[r])). A node holds
//     a whole number t of g's pods with t R_g <= A_o, so t <= the floor (the
//     division is nudged up by 1e-9 before flooring, so rounding can only
//     raise the cap). A node cannot hold more than C_g of them, nor, when g
//     needs k_g hosting nodes each holding at least one pod, more than
//     C_g - k_g + 1: cap_g is the smaller of the two. Summing over the n_o
//     nodes of o gives (C). With m_go = 1 (every pod of g needs its own
//     node, D_g = C_g) this is x_go <= n_o, one pod per node; with small floors it
//     charges pods that waste most of a node (two 1.5-cpu pods never share a
//     2-cpu node) for the waste.
//   - Zone caps. A plan places exactly C_g pods of g and at least M_gz' in
//     every zone z', so at most C_g - sum_{z' != z} M_gz' (the free pods
//     plus z's own minimum) in zone z, and no node of an offering in z
//     holds more: m_go is at most that (and at least 1). Where a zone
//     spread forces every pod (three pods, one per zone), a node holds one,
//     where the relaxation would otherwise meet each zone's minimum with
//     half a node holding two. Merging keeps it valid: a merged group's
//     plan places exactly its count and meets its summed minimums.
//   - Node presence. Every plan has at least k_g nodes hosting g, with
//     k_g = max(D_g, 1, ceil(C_g / mmax_g)), mmax_g the largest m_go: D_g
//     pods on distinct nodes, at least one pod, and no node holding more
//     than mmax_g. y_go counts the nodes of o hosting g, which is at most
//     n_o and, each holding a pod, at most x_go. k_g and cap_g are refined
//     against each other a few times; every step uses only facts already
//     proven. The presence row is added only when the caps do not imply it
//     (k_g > C_g/mmax_g), since sum_o y_go >= sum_o x_go/m_go >= C_g/mmax_g
//     holds anyway. This is what makes the bound exact for one pod
//     (it pays a whole node), for k distinct pods (k nodes) and for a group
//     filling ceil(C/m) nodes of one shape.
//
// # Reductions
//
// Before solving, the problem is shrunk; each step either keeps an optimal
// plan or relaxes the problem, so the bound stays valid:
//
//   - Merging. Groups with equal requests and equal allowed sets merge when
//     both have no distinct need (D <= 1) or both need all-distinct nodes:
//     counts and zone minimums add, k = max of the members' k, cap = sum of
//     the members' caps. Any plan for the members is a plan for the merged
//     group (a node holds at most the sum of the members' caps, the members'
//     hosting nodes host the merged group), so this relaxes. Groups with a
//     partial distinct need are never merged.
//   - Zonal merging. Among free groups with one request, with U the union of
//     their allowed sets, a group allowed exactly U restricted to one zone z
//     (zone self-affinity) is folded into one group allowed U with a zone
//     minimum M_z raised by its count. The pods are identical, so a plan
//     with at least that many in zone z relabels into one for the originals:
//     nothing is lost.
//   - Buckets and dominance. Offerings allowing the same groups are one
//     class (partition refinement over the allowed lists); a class is split
//     by zone where some of its groups has a minimum in that zone. In each
//     bucket an offering is dropped if another one costs no more and has at
//     least its allocatable in every resource (ties: the first kept).
//     Replacing every node of a dropped offering with its dominator keeps a
//     plan feasible (same groups allowed, same zone where a minimum looks at
//     it) and no costlier, so an optimal plan on the kept offerings exists.
//     Caps and presence are computed over kept offerings, which is valid for
//     that plan.
//
// # Solving and proving
//
// The LP is solved in the Dantzig-Wolfe form: a column is one node of an
// offering with a load (x_g per group, y_g = min(x_g, 1)); the cone of such
// loads is exactly (R), (C), (P) for that offering. Column generation
// alternates a restricted master (a dense revised simplex, rmp.go) with
// pricing, which for each offering solves a three-row LP, the best load of
// one node at the master's dual prices (knap.go). Rows are generated too:
// the master starts with the demand rows summed per resource (weights
// R_g[r], a nonnegative combination of (D), hence valid) and gets every
// demand, zone and presence row its solution violates. Dual prices are
// smoothed towards the best proof so far (Wentges), and adjacent vertices
// of each pricing optimum are added as columns, which cuts rounds several
// fold.
//
// Large inputs. A master of m rows costs about m^2 per pivot, and many
// distinct groups need many rounds, so past 64 merged groups or 320 rows the
// solver works in clustered mode: groups are clustered by request shape
// into 8 clusters, and the master only ever holds each cluster's demand
// rows summed per resource and its zone rows summed per zone (both
// nonnegative combinations of rows of the LP, so the smaller LP is still a
// relaxation), plus individual zone and presence rows it violates, up to
// 150 rows. Measured on 100 random distinct groups with zone minimums in 6
// zones, this costs 0.6% of tightness and saves 99% of the time. The same
// proof applies; Converged is then true only if the solution happens to
// meet every row of the full LP.
//
// The bound is never read off the master. Whatever dual prices pi >= 0 the
// rounds produce, pricing yields, for every offering, F_o >= the value
// sum_i pi_i a_i of any load of one node of o, because it is computed from
// resource prices through weak LP duality
// (F_o = sum_r y_r + sum_items u (w - a.y)^+ for any y >= 0), never from a
// possibly unconverged primal. For any plan (n, x, y), summing the rows
// weighted by pi,
//
//	D(pi) = sum_i b_i pi_i <= sum_o F_o n_o <= max(1, max_o F_o/p_o) * cost
//
// so D(pi) / max(1, max_o F_o/p_o) is a lower bound (Farley). With a
// zero-priced offering the ratio is unbounded; then
// D(pi) - P max_o (F_o - p_o)^+ is used, valid for plans without empty
// nodes, which have at most P (the number of pods) nodes. The best bound
// over all rounds is kept, and the result is scaled down by 1e-9 relative
// so that floating point rounding in these sums (far smaller) cannot lift
// it above the optimum. An iteration budget therefore only costs tightness,
// and Result.Converged reports whether the relaxation was solved to the
// tolerance (the master then holds a fractional solution meeting every row,
// Result.LPValue, within Options.Tolerance of the bound).
//
// # Whole pods (integral pricing)
//
// The proof only needs F_o >= the dual value of any load one node of o
// really carries, and a real node carries whole pods: x_g in {0, ...,
// m_go}, sum_g x_g R_g <= A_o, y_g = [x_g >= 1]. For small problems (at
// most 500 pods and 24 merged groups, exact mode, no zero-priced
// offering), once the fractional relaxation has converged, a second phase
// (integral.go) prices with that integer knapsack instead: depth-first
// branch and bound over the groups, each node bounded by weak duality at
// the resource prices y >= 0 of the fractional optimum
// (y.Rem + sum_g [(w1_g - R_g.y)^+ + (u_g - 1)(w2_g - R_g.y)^+], u_g the
// pods of g that still fit), with a node budget per knapsack and per
// Solve; a knapsack whose budget runs out uses its fractional bound,
// which is valid too. The master keeps only integral columns (the
// fractional ones are dropped, the artificials keep it feasible) and
// gets the integral optima that price out, so it converges to the
// configuration LP (Gilmore-Gomory): it knows that two 1.5-cpu pods and a
// 3-GiB pod never share a 4-cpu, 4-GiB node, which no per-resource
// argument sees. Every round's Farley bound is valid, for the same reason
// as above, and the best over both phases is kept. Converged, LPValue and
// Relaxation keep describing the fractional relaxation;
// Result.Configuration reports whether the configuration LP was solved
// within the budgets.
//
// # Whole nodes at the proof's prices (covering)
//
// With the best duals pi and any valid F_o, every plan has
// D(pi) <= sum_o F_o n_o with n_o whole numbers, so it costs at least the
// optimum of the one-dimensional covering knapsack
// min sum_o p_o n_o s.t. sum_o F_o n_o >= D(pi), n_o in {0, 1, ...}. Its
// linear relaxation is Farley's D / max_o(F_o/p_o); the integral one
// knows that a fraction of a node is not for sale (0.94 of the best node
// at the proof's prices costs a whole one, unless smaller nodes cover the
// rest for less). It is solved exactly by dynamic programming over 4096
// steps of D(pi), each F_o rounded up to a step (which only relaxes).
// LowerBound is the larger of this and the relaxation's proof
// (Result.Relaxation), so it may exceed LPValue.
//
// Measured on 1,200 seeded brute-force problems (integral_test.go): the
// bound is tighter on 249, exact on 1,170 (951 without these two parts),
// mean optimum/bound 1.0027 (was 1.0431); never above the optimum.
//
// # Whole nodes (Floor)
//
// The relaxation pays fractions of nodes; on a few nodes that can be far
// below any plan (41 pods of 750m and 500m need 22.75 cpu, a 7.74-cpu node
// holds at most 7.5 of them, so three nodes never suffice, where the
// relaxation pays 2.94). Floor is a second, separate bound for small
// problems (at most 500 pods and 24 groups, and a cap on its work): per
// resource, per set of groups (all, and each alone), the cheapest integral
// set of nodes whose capacities for those pods (subset sums within each
// offering's allocatable) cover their total demand, for all zones together
// and, summed, zone by zone for the pods zone minimums force there; and the
// same covering for cpu and memory at once (a two-dimensional covering
// knapsack on a 64 x 64 table, capacities rounded up to its cells), which
// knows that no mix of whole 2-cpu/16-unit and 8-cpu/16-unit nodes covers
// 8.55 cpu and 38 units for less than $4, where each resource alone costs
// $3. It is checked against the brute-force optimum like Solve (the joint
// covering raised it on 69 of 1,000 problems). The engine takes the
// larger of the two.
//
// # Exact packing of small parts (in Floor)
//
// Where zone minimums force a few dozen pods into each zone, the pods
// must sit, jointly in cpu, memory and pod slots, on one or two whole nodes
// per zone, which no relaxation or covering above sees (uneven-spread/1:
// every one of them stopped at $0.398/h where the exact optimum of this
// model is $0.4445/h). For parts of at most 8 groups (identical groups
// merged, below) Floor also computes
// that optimum exactly. One node of offering o holds integral x_g <= cap_g
// pods of the groups allowed on o within A_o in every resource (cap_g as
// above: C_g - D_g + 1, or 1 when all of g's pods are apart); every plan's
// node does, so the least cost f of such nodes holding the pods bounds the
// plan. f is a memoised recursion over the count vectors still to place:
// f(0) = 0, f(r) = min over the offerings o allowed to the first group g*
// with r_g* > 0 and the maximal loads x on o within r with x_g* >= 1 of
// price_o + f(r - x). Some node of an optimal solution holds a pod of g*;
// raising its load to a maximal one within r keeps it a load on that node
// and leaves fewer pods, which cost no more, so the minimum is f(r).
// Offerings dominated in their (zone, allowed groups) bucket are dropped
// first (swapping a node for its dominator keeps a plan feasible).
//
// With zone minimums, a plan puts n_zg >= M_zg of g's pods in zone z with
// sum_z n_zg = C_g, and its nodes in z (distinct from other zones') cost at
// least f_z(n_z), the packing restricted to zone z's offerings. Writing
// n_z = M_z + u_z, the free pods F = C - sum_z M_z are split among the
// zones, so the plan costs at least G(F), the min-plus combination over the
// zones: G_1(u) = f_1(M_1 + u), G_k(u) = min over v <= u of G_{k-1}(u - v)
// + f_k(M_k + v). That is the exact optimum of this model (whole nodes,
// allowed offerings, zone minimums, distinct-node caps), so no bound on it
// can do better. When the free vectors number more than 4,000 it falls
// back to the sum over zones of f_z(M_z) (the forced pods alone) and f
// with zones ignored, each also a bound.
//
// Identical groups (same request and allowed offerings, no pods that must
// be apart: two workloads of the same shape are two groups to the
// engine's bound) are merged first, counts and zone
// minimums summed: the merged problem has the same optimum (a plan for it
// relabels into one for p: in each zone, M_zg of its pods there take
// member g's label, the rest the labels of the members' free pods), and
// fewer groups mean far fewer count vectors (uneven-spread/2: 4 groups to
// 3). The search skips a branch that cannot beat the best found so far:
// before enumerating the loads of offering o, when price_o plus the demand
// beyond A_o at the least price per unit of some resource already reaches
// it, and before recursing into r - x, when price_o plus that floor of
// r - x does; f(r) stays exact, so the memo does too.
//
// Work is capped deterministically: at most 100,000 count vectors per
// search and 3,500,000 load-search steps per Floor call (300,000 without
// zone minimums, where the relaxations see most of it); a search past a cap
// contributes 0 (never a number from an unfinished search). Checked
// against the brute-force optimum on 1,500 seeded problems
// (pack_test.go): never above it; max(Floor, Solve's bound) is exact on
// all 1,500 (1,474 without the packing); on 834 more with a group split in
// two identical ones, the split optimum is the unsplit one, the merged
// packing equals the unsplit packing, and pruned and unpruned searches
// agree on every problem. On the engine's cost
// families the bound of uneven-spread/1 now equals the integer optimum of
// the model computed independently (0.4445).
//
// # Cost
//
// Work is bounded deterministically by Options.MaxRounds, Options.MaxPivots
// and a cap on the master's work (the sum of m^2 over pivots); no clock is
// read. On benchmark.md's reference workload the bound converges in 40-50
// rounds and about 2000 master pivots, roughly 80-100 ms of CPU from 1k to
// 100k pods (the group count, not the pod count, sets the size); an
// EC2-like catalog of 800 types in 6 zones takes about 2.5x that, and 300
// distinct groups in clustered mode about 130 ms. BenchmarkSolve reports
// the figures.
//
// The tests check all of this against an independent brute-force
// enumeration of plans on a thousand small random problems (and clustered
// mode, forced, on hundreds more) and against an independent dense simplex
// on the plain relaxation.
package bound
