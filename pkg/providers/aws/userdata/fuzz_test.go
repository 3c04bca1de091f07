package userdata

import (
	"strings"
	"testing"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

var families = []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyAL2, awsv1.AMIFamilyCustom}

// FuzzParse feeds arbitrary user data to Parse: it must return a Node or
// an error, never panic.
func FuzzParse(f *testing.F) {
	for _, fam := range families[:3] {
		data, err := Render(baseInput(fam))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), data)
		f.Add(uint8(1), data)
		f.Add(uint8(2), data)
	}
	f.Add(uint8(0), "Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: application/node.eks.aws\n\nspec: [")
	f.Add(uint8(1), "[settings.kubernetes.node-taints]\na = 1\n")
	f.Add(uint8(2), "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--node-labels=a")
	f.Fuzz(func(t *testing.T, fam uint8, data string) {
		_, _ = Parse(families[int(fam)%len(families)], data)
	})
}

// FuzzRender renders with arbitrary user data: Render must not panic, and
// whatever it renders must parse back to the cluster and labels it was given.
func FuzzRender(f *testing.F) {
	f.Add(uint8(0), "#!/bin/bash\necho hi\n")
	f.Add(uint8(0), "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n")
	f.Add(uint8(1), "[settings.kubernetes]\nmax-pods = 3\n")
	f.Add(uint8(2), "#!/bin/bash\n")
	f.Add(uint8(0), "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/x-shellscript\n\n#!/bin/sh\n--b--\n")
	f.Fuzz(func(t *testing.T, fam uint8, userData string) {
		family := families[int(fam)%3]
		in := baseInput(family)
		in.UserData = &userData
		data, err := Render(in)
		if err != nil {
			return
		}
		n, err := Parse(family, data)
		if err != nil {
			// User parts may be NodeConfigs nodeadm itself would refuse;
			// only dovetail's own output must always parse.
			if family != awsv1.AMIFamilyAL2023 {
				t.Fatalf("Parse(Render()) failed: %v\n%s", err, data)
			}
			return
		}
		if family == awsv1.AMIFamilyAL2 && strings.Contains(userData, BootstrapScript) {
			return // the user's own bootstrap call runs first
		}
		if n.ClusterName != in.ClusterName {
			t.Fatalf("cluster name = %q, want %q", n.ClusterName, in.ClusterName)
		}
		want := wantLabels(in)
		for k, v := range want {
			if n.Labels[k] != v {
				t.Fatalf("label %s = %q, want %q (all: %v)", k, n.Labels[k], v, n.Labels)
			}
		}
	})
}
