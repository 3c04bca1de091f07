package awsemu_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

func TestInstanceProfileLifecycle(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := iam.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	name := aws.String("local_1234567890")
	tags := []iamtypes.Tag{
		{Key: aws.String("kubernetes.io/cluster/local"), Value: aws.String("owned")},
		{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
	}
	created, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(created.InstanceProfile.Arn), "arn:aws:iam::111122223333:instance-profile/local_1234567890"; got != want {
		t.Errorf("arn %s, want %s", got, want)
	}
	steps := []struct {
		name string
		call func() error
		code string
	}{
		{"create again", func() error {
			_, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name})
			return err
		}, "EntityAlreadyExists"},
		{"add unknown role", func() error {
			_, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("NoSuchRole")})
			return err
		}, "NoSuchEntity"},
		{"add node role", func() error {
			_, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-local")})
			return err
		}, ""},
		{"add a second role", func() error {
			_, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-local")})
			return err
		}, "LimitExceeded"},
		{"delete with a role", func() error {
			_, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
			return err
		}, "DeleteConflict"},
		{"tag", func() error {
			_, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name, Tags: []iamtypes.Tag{{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String("us-east-1")}}})
			return err
		}, ""},
		{"tag with a reserved key", func() error {
			_, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name, Tags: []iamtypes.Tag{{Key: aws.String("aws:x"), Value: aws.String("y")}}})
			return err
		}, "InvalidInput"},
		{"bad name", func() error {
			_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("has space")})
			return err
		}, "ValidationError"},
	}
	for _, s := range steps {
		if got := apiCode(t, s.call()); got != s.code {
			t.Errorf("%s: error code %q, want %q", s.name, got, s.code)
		}
	}
	got, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.InstanceProfile.Roles) != 1 || aws.ToString(got.InstanceProfile.Roles[0].RoleName) != "KarpenterNodeRole-local" {
		t.Errorf("roles %+v", got.InstanceProfile.Roles)
	}
	if len(got.InstanceProfile.Tags) != 3 {
		t.Errorf("tags %+v, want 3", got.InstanceProfile.Tags)
	}
	// The CLI reads the same profile and the same errors.
	var cliOut struct {
		InstanceProfile struct {
			Roles []struct{ RoleName string }
			Tags  []struct{ Key, Value string }
		}
	}
	if err := cli(t, e, &cliOut, "iam", "get-instance-profile", "--instance-profile-name", *name); err != nil {
		t.Fatal(err)
	}
	if len(cliOut.InstanceProfile.Roles) != 1 || len(cliOut.InstanceProfile.Tags) != 3 {
		t.Errorf("aws iam get-instance-profile: %+v", cliOut)
	}
	if code := cliCode(t, e, "iam", "get-instance-profile", "--instance-profile-name", "nope"); code != "NoSuchEntity" {
		t.Errorf("aws iam get-instance-profile nope: %q", code)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-local")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	var nse *iamtypes.NoSuchEntityException
	if !errors.As(err, &nse) {
		t.Errorf("after delete: %v, want a NoSuchEntityException", err)
	}
}

func TestListInstanceProfilesPages(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := iam.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	for i := 0; i < 7; i++ {
		path := "/"
		if i%2 == 1 {
			path = "/karpenter/"
		}
		if _, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p" + strconv.Itoa(i)), Path: aws.String(path)}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(prefix string) (n, pages int) {
		p := iam.NewListInstanceProfilesPaginator(c, &iam.ListInstanceProfilesInput{PathPrefix: aws.String(prefix), MaxItems: aws.Int32(2)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			n += len(out.InstanceProfiles)
		}
		return n, pages
	}
	if n, pages := count("/"); n != 7 || pages != 4 {
		t.Errorf("all: %d profiles in %d pages, want 7 in 4", n, pages)
	}
	if n, _ := count("/karpenter/"); n != 3 {
		t.Errorf("/karpenter/: %d profiles, want 3", n)
	}
	out := boto(t, e, `
iam = client('iam')
names = []
for page in iam.get_paginator('list_instance_profiles').paginate(PaginationConfig={'PageSize': 3}):
    names += [p['InstanceProfileName'] for p in page['InstanceProfiles']]
out['names'] = names
out['bad'] = code(iam.list_instance_profiles, MaxItems=1001)
`)
	if names, _ := out["names"].([]any); len(names) != 7 {
		t.Errorf("boto3 listed %v", out["names"])
	}
	if out["bad"] != "ValidationError" {
		t.Errorf("boto3 MaxItems=1001: %v", out["bad"])
	}
}

func TestSSMGetParameters(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ssm.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	params := e.SSMParameters()
	good := "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"
	if _, ok := params[good]; !ok {
		t.Fatalf("%s is not seeded", good)
	}
	out, err := c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{good, "/aws/service/nope"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Parameters) != 1 || aws.ToString(out.Parameters[0].Value) != params[good] || len(out.InvalidParameters) != 1 {
		t.Errorf("GetParameters: %+v invalid %v", out.Parameters, out.InvalidParameters)
	}
	if out.Parameters[0].LastModifiedDate == nil || out.Parameters[0].Type != ssmtypes.ParameterTypeString {
		t.Errorf("parameter %+v", out.Parameters[0])
	}
	_, err = c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/nope")})
	var pnf *ssmtypes.ParameterNotFound
	if !errors.As(err, &pnf) {
		t.Errorf("missing parameter: %v", err)
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = good + strconv.Itoa(i)
	}
	_, err = c.GetParameters(ctx, &ssm.GetParametersInput{Names: eleven})
	if code := apiCode(t, err); code != "ValidationException" {
		t.Errorf("11 names: %q", code)
	}
	if code := cliCode(t, e, "ssm", "get-parameter", "--name", "/aws/service/nope"); code != "ParameterNotFound" {
		t.Errorf("aws ssm get-parameter: %q", code)
	}
	var cliOut struct{ Parameter struct{ Value string } }
	if err := cli(t, e, &cliOut, "ssm", "get-parameter", "--name", good); err != nil || cliOut.Parameter.Value != params[good] {
		t.Errorf("aws ssm get-parameter: %v %+v", err, cliOut)
	}
}

// priceDoc is the part of a PriceList entry that price readers use.
type priceDoc struct {
	Product struct {
		Attributes map[string]string `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

func (d priceDoc) usd() float64 {
	for _, term := range d.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			v, _ := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
			return v
		}
	}
	return -1
}

func TestPricingGetProducts(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := pricing.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	filters := func(kv ...string) []pricingtypes.Filter {
		var fs []pricingtypes.Filter
		for i := 0; i < len(kv); i += 2 {
			fs = append(fs, pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(kv[i]), Value: aws.String(kv[i+1])})
		}
		return fs
	}
	// The filters the AWS provider sends for a region's Linux on-demand prices.
	regionFilters := filters("regionCode", "eu-west-1", "operatingSystem", "Linux", "tenancy", "Shared",
		"capacitystatus", "Used", "preInstalledSw", "NA")
	cat := catalog.Builtin()
	want := 0
	for _, ty := range cat.Types() {
		if _, ok := cat.OnDemandPrice("eu-west-1", ty.Name); ok {
			want++
		}
	}
	got := 0
	p := pricing.NewGetProductsPaginator(c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: regionFilters, MaxResults: aws.Int32(100)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range out.PriceList {
			var d priceDoc
			if err := json.Unmarshal([]byte(s), &d); err != nil {
				t.Fatalf("price list entry is not JSON: %v", err)
			}
			ty := d.Product.Attributes["instanceType"]
			price, _ := cat.OnDemandPrice("eu-west-1", ty)
			if d.usd() != price {
				t.Fatalf("%s: %g, the catalog says %g", ty, d.usd(), price)
			}
			got++
		}
	}
	if got != want {
		t.Errorf("%d products for eu-west-1, the catalog prices %d", got, want)
	}
	for _, tc := range []struct {
		name    string
		filters []pricingtypes.Filter
		n       int
	}{
		{"one type, both tenancies", filters("instanceType", "m5.large", "regionCode", "us-east-1"), 2},
		{"shared", filters("instanceType", "m5.large", "regionCode", "us-east-1", "tenancy", "Shared"), 1},
		{"dedicated", filters("instanceType", "m5.large", "regionCode", "us-east-1", "tenancy", "Dedicated"), 1},
		{"no dedicated burstable", filters("instanceType", "t3.micro", "regionCode", "us-east-1", "tenancy", "Dedicated"), 0},
		{"product family", filters("instanceType", "m5.large", "regionCode", "us-east-1", "tenancy", "Shared", "productFamily", "Compute Instance"), 1},
		{"bare metal product family", filters("instanceType", "m5.metal", "regionCode", "us-east-1", "tenancy", "Shared", "productFamily", "Compute Instance (bare metal)"), 1},
		{"bare metal is not Compute Instance", filters("instanceType", "m5.metal", "regionCode", "us-east-1", "productFamily", "Compute Instance"), 0},
		{"windows is not priced", filters("instanceType", "m5.large", "regionCode", "us-east-1", "operatingSystem", "Windows"), 0},
		{"location name", filters("instanceType", "m5.large", "location", "US East (N. Virginia)", "tenancy", "Shared"), 1},
	} {
		out, err := c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: tc.filters})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.PriceList) != tc.n {
			t.Errorf("%s: %d products, want %d", tc.name, len(out.PriceList), tc.n)
		}
	}
	// Dedicated costs DedicatedPriceFactor times Shared; the family is in
	// the document.
	ded, err := c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"),
		Filters: filters("instanceType", "m5.large", "regionCode", "us-east-1", "tenancy", "Dedicated", "productFamily", "Compute Instance")})
	if err != nil || len(ded.PriceList) != 1 {
		t.Fatalf("dedicated m5.large: %v, %+v", err, ded)
	}
	var d priceDoc
	if err := json.Unmarshal([]byte(ded.PriceList[0]), &d); err != nil {
		t.Fatal(err)
	}
	shared, _ := cat.OnDemandPrice("us-east-1", "m5.large")
	if math.Abs(d.usd()-shared*awsemu.DedicatedPriceFactor) > 1e-9 || d.Product.Attributes["tenancy"] != "Dedicated" {
		t.Errorf("dedicated m5.large: $%g (%s), want $%g", d.usd(), d.Product.Attributes["tenancy"], shared*awsemu.DedicatedPriceFactor)
	}
	_, err = c.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), NextToken: aws.String("bogus")})
	var bad *pricingtypes.InvalidNextTokenException
	if !errors.As(err, &bad) {
		t.Errorf("bad token: %v", err)
	}
	out := boto(t, e, `
p = client('pricing')
r = p.get_products(ServiceCode='AmazonEC2', Filters=[
    {'Type': 'TERM_MATCH', 'Field': 'instanceType', 'Value': 'm5.large'},
    {'Type': 'TERM_MATCH', 'Field': 'regionCode', 'Value': 'us-east-1'}])
doc = json.loads(r['PriceList'][0])
terms = list(doc['terms']['OnDemand'].values())[0]
out['usd'] = list(terms['priceDimensions'].values())[0]['pricePerUnit']['USD']
out['max'] = code(p.get_products, ServiceCode='AmazonEC2', MaxResults=101)
`)
	od, _ := cat.OnDemandPrice("us-east-1", "m5.large")
	if v, _ := strconv.ParseFloat(out["usd"].(string), 64); v != od {
		t.Errorf("boto3 m5.large price %v, want %g", out["usd"], od)
	}
	if out["max"] != "ValidationException" {
		t.Errorf("boto3 MaxResults=101: %v", out["max"])
	}
}

func TestEKSDescribeCluster(t *testing.T) {
	e := start(t, awsemu.Options{ClusterName: "dev", KubernetesVersion: "1.37"})
	e.SetCluster("https://127.0.0.1:6443", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	c := eks.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	out, err := c.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dev")})
	if err != nil {
		t.Fatal(err)
	}
	cl := out.Cluster
	if aws.ToString(cl.Endpoint) != "https://127.0.0.1:6443" || aws.ToString(cl.Version) != "1.37" || cl.Status != ekstypes.ClusterStatusActive {
		t.Errorf("cluster %s %s %s", aws.ToString(cl.Endpoint), aws.ToString(cl.Version), cl.Status)
	}
	if cl.CertificateAuthority == nil || !strings.HasPrefix(aws.ToString(cl.CertificateAuthority.Data), "LS0tLS1CRUdJTi") {
		t.Errorf("certificate authority %+v", cl.CertificateAuthority)
	}
	if cl.KubernetesNetworkConfig == nil || aws.ToString(cl.KubernetesNetworkConfig.ServiceIpv4Cidr) != awsemu.DefaultServiceCIDR {
		t.Errorf("network config %+v", cl.KubernetesNetworkConfig)
	}
	_, err = c.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("prod")})
	var rnf *ekstypes.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Errorf("unknown cluster: %v", err)
	}
	if code := cliCode(t, e, "eks", "describe-cluster", "--name", "prod"); code != "ResourceNotFoundException" {
		t.Errorf("aws eks describe-cluster: %q", code)
	}
}
