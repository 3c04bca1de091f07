package awsemu

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// maxClientToken is the longest client token EC2 accepts: "a unique,
// case-sensitive string of up to 64 ASCII characters".
const maxClientToken = 64

// tokenRec is what a client token is bound to: the request it came with
// (a digest of its parameters) and the answer it got.
type tokenRec struct {
	digest string
	out    any
}

// idempotent makes an EC2 action that takes a ClientToken idempotent as
// EC2 does (CreateFleet, RunInstances): the first request with a token
// that completes binds the token to its parameters and its answer; a
// repeat with the same parameters gets that answer again and launches
// nothing; a repeat with other parameters is IdempotentParameterMismatch.
// Only completed requests bind a token: one that failed as a whole (a
// malformed request, a throttle, DryRun) can be repeated with it. A token
// is kept for the emulator's lifetime (EC2: at least 24 hours after the
// instances terminate). Tokens of different actions are separate.
func idempotent(h func(*Emulator, *request) (any, *apiError)) func(*Emulator, *request) (any, *apiError) {
	return func(e *Emulator, req *request) (any, *apiError) {
		token := req.params.Get("ClientToken")
		if token == "" {
			return h(e, req)
		}
		if aerr := checkClientToken(token); aerr != nil {
			return nil, aerr
		}
		key := req.action + "\x00" + token
		digest := requestDigest(req)
		if rec, ok := e.acct.tokens[key]; ok {
			if rec.digest != digest {
				return nil, newAPIError("IdempotentParameterMismatch", 400,
					"Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
			}
			return rec.out, nil
		}
		out, aerr := h(e, req)
		if aerr == nil {
			e.acct.tokens[key] = tokenRec{digest: digest, out: out}
		}
		return out, aerr
	}
}

// checkClientToken refuses a token EC2 would not take: longer than 64
// characters, or not printable ASCII.
func checkClientToken(token string) *apiError {
	if len(token) > maxClientToken {
		return errInvalidParameterValue("ClientToken", token, "Length exceeds the maximum of 64 characters.")
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x20 || c > 0x7e {
			return errInvalidParameterValue("ClientToken", token, "A client token is up to 64 printable ASCII characters.")
		}
	}
	return nil
}

// requestDigest is a digest of every parameter of the request but the
// token itself (and DryRun, which never completes a request), in key
// order: two requests with the same digest asked for the same thing.
func requestDigest(req *request) string {
	v := req.params.values
	keys := make([]string, 0, len(v))
	for k := range v {
		if k == "ClientToken" || k == "DryRun" {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(strings.Join(v[k], "\x01")))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
