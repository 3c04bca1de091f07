package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
)

// Launching a NodeClaim is idempotent across retries and restarts, with no
// AWS call added to a first launch:
//
//   - In one process, a NodeClaim launched once gets the same instance
//     back from a second Create (its launch was not recorded: a failed
//     patch, a lagging cache); nothing is called.
//   - Every launch has a client token derived from the NodeClaim's UID,
//     the number of this process's earlier launches of it that EC2
//     answered without an instance, and a digest of the request (without
//     the NodeClaim's own tags); a batch's CreateFleet carries a digest of
//     its launches' tokens (instance.LaunchRequest).
//     A repeat of a call whose answer was lost (a timeout, a kill, another
//     replica) with the same parameters gets the same instance from EC2;
//     a request with other parameters (after a restart the
//     unavailable-offerings cache is empty, so the overrides differ) has
//     another token, never IdempotentParameterMismatch.
//   - A NodeClaim this process has not launched and that may have been
//     launched before it (created before the provider started, or older
//     than launchLookupAge) is first looked up by its karpenter.sh/nodeclaim
//     tag (one DescribeInstances call shared by concurrent lookups); an
//     instance found is adopted instead of launching another. With none,
//     an instance of the same launch never tagged with a NodeClaim's name
//     is adopted (adoptUntagged; also after a failed tagging or a lost
//     fleet answer in this process, launchRecord.uncertain).
//
// What the process knows lives in memory only: a restart starts with an
// empty record, which is what the lookup is for.

// launchLookupAge: a NodeClaim this process has not launched, older than
// this, is looked up before launching (a leader that took over from
// another, a NodeClaim whose first reconcile waited in a long queue).
const launchLookupAge = 10 * time.Second

// launchRecordTTL bounds how long the record of one NodeClaim's launches
// is kept; a record dropped early costs one lookup, never a duplicate.
const launchRecordTTL = 30 * time.Minute

// launchRecord is what this process knows of one NodeClaim's launches.
type launchRecord struct {
	at time.Time
	// instance is what a launch or a lookup found ("" ID: none yet).
	instance *instance.Instance
	// empty counts launches EC2 answered without an instance: each spends
	// its token, so the next launch needs another.
	empty int
	// uncertain: a launch may have made an instance without the
	// NodeClaim's tag (its tagging failed, or the fleet's answer was lost);
	// the next Create looks for it first.
	uncertain bool
}

// launches records, per NodeClaim UID, what this process did.
type launches struct {
	mu      sync.Mutex
	byUID   map[types.UID]*launchRecord
	started time.Time
	puts    int
	// adopted are the untagged instances a NodeClaim of this process
	// adopted (or is adopting): each goes to one NodeClaim.
	adopted map[string]bool
}

// adopt reserves an untagged instance for one NodeClaim: false when
// another took it.
func (l *launches) adopt(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.adopted[id] {
		return false
	}
	if l.adopted == nil {
		l.adopted = map[string]bool{}
	}
	l.adopted[id] = true
	return true
}

// release undoes adopt (the tagging failed).
func (l *launches) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.adopted, id)
}

// get returns the record, nil if this process has none.
func (l *launches) get(uid types.UID) *launchRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.byUID[uid]; r != nil {
		c := *r
		return &c
	}
	return nil
}

// update applies f to the record (made if missing) at now.
func (l *launches) update(uid types.UID, now time.Time, f func(*launchRecord)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byUID == nil {
		l.byUID = map[types.UID]*launchRecord{}
	}
	r := l.byUID[uid]
	if r == nil {
		r = &launchRecord{}
		l.byUID[uid] = r
	}
	r.at = now
	f(r)
	l.puts++
	if l.puts%256 == 0 {
		for k, v := range l.byUID {
			if now.Sub(v.at) > launchRecordTTL {
				delete(l.byUID, k)
			}
		}
	}
}

// mayHaveBeenLaunched reports whether another process (an earlier run, or
// another leader) may have launched the NodeClaim: this process has no
// record of it, and it was created before the provider started or is
// older than launchLookupAge. A NodeClaim without UID or creation time
// (not from the API server) never is.
func (l *launches) mayHaveBeenLaunched(nc *karpv1.NodeClaim, now time.Time) bool {
	if nc.UID == "" || nc.CreationTimestamp.IsZero() || l.get(nc.UID) != nil {
		return false
	}
	created := nc.CreationTimestamp.Time
	return created.Before(l.started) || now.Sub(created) > launchLookupAge
}

// clientToken is the CreateFleet token of a launch: the NodeClaim's UID,
// the count of its earlier launches answered without an instance, and the
// first 64 bits of a digest of the request, within EC2's 64 printable
// ASCII characters.
func clientToken(uid types.UID, empty int, req *instance.LaunchRequest) string {
	id := string(uid)
	if len(id) > 36 || !printableASCII(id) {
		sum := sha256.Sum256([]byte(id))
		id = hex.EncodeToString(sum[:16])
	}
	c := *req
	c.ClientToken = ""
	b, _ := json.Marshal(&c)
	sum := sha256.Sum256(b)
	return id + "-" + strconv.Itoa(empty) + "-" + hex.EncodeToString(sum[:8])
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
