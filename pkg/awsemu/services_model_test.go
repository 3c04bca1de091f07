package awsemu

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// commonErrors are the errors AWS documents as common to every action of
// a protocol ("Common Errors" of the IAM, SSM and Pricing API references),
// which the service models do not list per operation, with their HTTP
// status.
var commonErrors = map[string]map[string]int{
	"query": {"ValidationError": 400, "MissingAction": 400, "InvalidAction": 400},
	"json":  {"ValidationException": 400, "SerializationException": 400, "UnknownOperationException": 400, "InternalFailure": 500},
}

// sourceGraph is, for every function and method of the given files, the
// error codes it sends (newAPIError with literal code and status) and the
// functions it calls (by name; calls to functions outside the files are
// not followed: a service's handlers build their errors in its own file
// and errors.go).
type sourceGraph struct {
	codes map[string]map[string]int // function -> code -> status
	calls map[string][]string
}

func readSourceGraph(t *testing.T, files ...string) sourceGraph {
	t.Helper()
	g := sourceGraph{codes: map[string]map[string]int{}, calls: map[string][]string{}}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn := fd.Name.Name
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var callee string
				switch f := call.Fun.(type) {
				case *ast.Ident:
					callee = f.Name
				case *ast.SelectorExpr:
					callee = f.Sel.Name
				}
				if callee == "newAPIError" {
					code, okc := stringLit(call.Args[0])
					status, oks := statusLit(call.Args[1])
					if okc && oks {
						if g.codes[fn] == nil {
							g.codes[fn] = map[string]int{}
						}
						g.codes[fn][code] = status
					}
					return true
				}
				if callee != "" {
					g.calls[fn] = append(g.calls[fn], callee)
				}
				return true
			})
		}
	}
	return g
}

// reach returns the codes fn and everything it calls (transitively) send.
func (g sourceGraph) reach(fn string) map[string]int {
	out := map[string]int{}
	seen := map[string]bool{}
	var walk func(string)
	walk = func(f string) {
		if seen[f] {
			return
		}
		seen[f] = true
		for c, s := range g.codes[f] {
			out[c] = s
		}
		for _, c := range g.calls[f] {
			walk(c)
		}
	}
	walk(fn)
	return out
}

// opHandlers maps each operation of an ops table (iamOps, ssmOps,
// pricingOps) to its handler method, read from the table's literal.
func opHandlers(t *testing.T, file, table string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != table {
			return true
		}
		lit := vs.Values[0].(*ast.CompositeLit)
		for _, el := range lit.Elts {
			kv := el.(*ast.KeyValueExpr)
			op, _ := stringLit(kv.Key)
			if sel, ok := kv.Value.(*ast.SelectorExpr); ok {
				out[op] = sel.Sel.Name
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatalf("%s: no operations in %s", file, table)
	}
	return out
}

// modelErrors returns, per operation of a botocore service model, the
// error codes it lists with their HTTP status (400 where the model gives
// none, as the JSON protocols answer).
func modelErrors(t *testing.T, service string, ops []string) map[string]map[string]int {
	t.Helper()
	list, _ := json.Marshal(ops)
	out, err := exec.Command("python3", "-c", `
import botocore.session, json
m = botocore.session.get_session().get_service_model('`+service+`')
out = {}
for op in `+string(list)+`:
    errs = {}
    for e in m.operation_model(op).error_shapes:
        meta = e.metadata.get('error', {})
        errs[meta.get('code', e.name)] = meta.get('httpStatusCode', 400)
    out[op] = errs
print(json.dumps(out))
`).Output()
	if err != nil {
		t.Fatalf("reading botocore's %s model: %v", service, err)
	}
	var m map[string]map[string]int
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestServiceErrorsMatchTheModels: every error an IAM, SSM or Pricing
// operation of the emulator can send (its handler and what it calls, read
// from the source) is one botocore's model lists for that operation, with
// the model's HTTP status, or one of the protocol's common errors; and
// what the dispatchers send to every operation is a common error.
func TestServiceErrorsMatchTheModels(t *testing.T) {
	for _, svc := range []struct{ service, protocol, file, table, dispatcher string }{
		{"iam", "query", "iam.go", "iamOps", "serveQuery"},
		{"ssm", "json", "ssm.go", "ssmOps", "serveJSON"},
		{"pricing", "json", "pricing.go", "pricingOps", "serveJSON"},
	} {
		g := readSourceGraph(t, svc.file, "errors.go", "json.go")
		handlers := opHandlers(t, svc.file, svc.table)
		var ops []string
		for op := range handlers {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		model := modelErrors(t, svc.service, ops)
		for _, op := range ops {
			sent := g.reach(handlers[op])
			for code, status := range sent {
				want, modeled := model[op][code]
				if !modeled {
					want, modeled = commonErrors[svc.protocol][code]
				}
				switch {
				case !modeled:
					t.Errorf("%s %s: the emulator can send %s, which the model does not list for it and is not a common error", svc.service, op, code)
				case status != want:
					t.Errorf("%s %s: %s with HTTP %d, the model says %d", svc.service, op, code, status, want)
				}
			}
		}
		for code, status := range g.codes[svc.dispatcher] {
			want, ok := commonErrors[svc.protocol][code]
			if !ok { // or one the model lists for every operation
				for i, op := range ops {
					w, listed := model[op][code]
					if !listed || (i > 0 && w != want) {
						ok = false
						break
					}
					want, ok = w, true
				}
			}
			if !ok || want != status {
				t.Errorf("%s dispatcher (%s) sends %s HTTP %d, not a common error of the %s protocol", svc.service, svc.dispatcher, code, status, svc.protocol)
			}
		}
	}
}
