package awsemu_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

const al2023AMD64Latest = "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"

func TestPublishImageMovesTheAliasParametersToANewImage(t *testing.T) {
	e := start(t, awsemu.Options{})
	ctx := context.Background()
	cfg := sdkConfig(e)
	s, ec := ssm.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	get := func(name string) *ssm.GetParameterOutput {
		t.Helper()
		out, err := s.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if err != nil {
			t.Fatalf("GetParameter %s: %v", name, err)
		}
		return out
	}
	before := get(al2023AMD64Latest)

	admin := e.AdminClient()
	res, err := admin.PublishImage(ctx, awsemu.PublishImageRequest{Alias: "al2023@latest"})
	if err != nil {
		t.Fatal(err)
	}
	// Every architecture and variant of al2023: x86_64 and arm64 standard
	// and nvidia, x86_64 neuron.
	if len(res.Published) != 5 {
		t.Fatalf("published %d parameters, want 5: %+v", len(res.Published), res.Published)
	}
	var amd *awsemu.PublishedImage
	for i, p := range res.Published {
		if !strings.Contains(p.Parameter, "/amazon-linux-2023/") || p.ImageID == p.PreviousImageID {
			t.Errorf("published %+v", p)
		}
		if p.Parameter == al2023AMD64Latest {
			amd = &res.Published[i]
		}
	}
	if amd == nil {
		t.Fatalf("the x86_64 standard parameter was not published: %+v", res.Published)
	}
	after := get(al2023AMD64Latest)
	if got := aws.ToString(after.Parameter.Value); got != amd.ImageID || got == aws.ToString(before.Parameter.Value) {
		t.Errorf("GetParameter after publishing = %s, published %s, before %s", got, amd.ImageID, aws.ToString(before.Parameter.Value))
	}
	if after.Parameter.Version != before.Parameter.Version+1 {
		t.Errorf("parameter version %d -> %d, want +1", before.Parameter.Version, after.Parameter.Version)
	}
	if amd.Version != "v20251102" || !strings.HasSuffix(amd.Name, "-v20251102") {
		t.Errorf("new image version %q name %q, want v20251102", amd.Version, amd.Name)
	}
	imgs, err := ec.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{amd.ImageID}})
	if err != nil || len(imgs.Images) != 1 {
		t.Fatalf("DescribeImages of the new image: %v, %d images", err, len(imgs.Images))
	}
	img, old := imgs.Images[0], describe(t, ec, aws.ToString(before.Parameter.Value))
	if aws.ToString(img.Name) != amd.Name || img.Architecture != old.Architecture || aws.ToString(img.CreationDate) <= aws.ToString(old.CreationDate) {
		t.Errorf("new image %s (%s, %s), old %s (%s, %s): want the same architecture, a later date",
			aws.ToString(img.Name), img.Architecture, aws.ToString(img.CreationDate), aws.ToString(old.Name), old.Architecture, aws.ToString(old.CreationDate))
	}
	// The pinned alias of the new version resolves too.
	pinned := "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/" + amd.Name + "/image_id"
	if got := aws.ToString(get(pinned).Parameter.Value); got != amd.ImageID {
		t.Errorf("%s = %s, want %s", pinned, got, amd.ImageID)
	}
	// Publishing again makes yet another version.
	again, err := admin.PublishImage(ctx, awsemu.PublishImageRequest{Parameter: al2023AMD64Latest})
	if err != nil || len(again.Published) != 1 || again.Published[0].Version != "v20251103" || again.Published[0].PreviousImageID != amd.ImageID {
		t.Errorf("second publish by parameter = %+v, %v; want v20251103 replacing %s", again, err, amd.ImageID)
	}
}

func TestPublishImageBottlerocketAndBadInput(t *testing.T) {
	e := start(t, awsemu.Options{})
	ctx := context.Background()
	admin := e.AdminClient()
	res, err := admin.PublishImage(ctx, awsemu.PublishImageRequest{Alias: "bottlerocket@latest"})
	if err != nil || len(res.Published) != 2 || res.Published[0].Version != "1.51.0" {
		t.Fatalf("bottlerocket@latest = %+v, %v; want 2 parameters at 1.51.0", res, err)
	}
	v, err := ssm.NewFromConfig(sdkConfig(e)).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/bottlerocket/aws-k8s-1.37/x86_64/1.51.0/image_id")})
	if err != nil || aws.ToString(v.Parameter.Value) == "" {
		t.Errorf("the versioned Bottlerocket parameter: %v", err)
	}
	for _, tc := range []struct {
		req    awsemu.PublishImageRequest
		status int
		want   string
	}{
		{awsemu.PublishImageRequest{}, 400, "exactly one"},
		{awsemu.PublishImageRequest{Alias: "al2023@latest", Parameter: al2023AMD64Latest}, 400, "exactly one"},
		{awsemu.PublishImageRequest{Alias: "al2023@v20251101"}, 400, "never moves"},
		{awsemu.PublishImageRequest{Alias: "windows2022@latest"}, 404, "windows2022"},
		{awsemu.PublishImageRequest{Alias: "al2023"}, 400, "family@latest"},
		{awsemu.PublishImageRequest{Parameter: "/no/such"}, 404, "/no/such"},
	} {
		_, err := admin.PublishImage(ctx, tc.req)
		var se *awsemu.AdminStatusError
		if !errors.As(err, &se) || se.Status != tc.status || !strings.Contains(se.Message, tc.want) {
			t.Errorf("PublishImage(%+v) = %v; want HTTP %d mentioning %q", tc.req, err, tc.status, tc.want)
		}
	}
}

func describe(t *testing.T, ec *ec2.Client, id string) ec2types.Image {
	t.Helper()
	out, err := ec.DescribeImages(context.Background(), &ec2.DescribeImagesInput{ImageIds: []string{id}})
	if err != nil || len(out.Images) != 1 {
		t.Fatalf("DescribeImages %s: %v", id, err)
	}
	return out.Images[0]
}
