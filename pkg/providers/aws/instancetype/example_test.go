package instancetype_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instancetype"
)

// ExampleFromEC2 converts a DescribeInstanceTypes entry and computes what a
// default AL2023 node of that type reports.
func ExampleFromEC2() {
	info := ec2types.InstanceTypeInfo{
		InstanceType:          "m7g.large",
		ProcessorInfo:         &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{"arm64"}, Manufacturer: aws.String("AWS")},
		VCpuInfo:              &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(2)},
		MemoryInfo:            &ec2types.MemoryInfo{SizeInMiB: aws.Int64(8192)},
		NetworkInfo:           &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(3), Ipv4AddressesPerInterface: aws.Int32(10)},
		SupportedUsageClasses: []ec2types.UsageClassType{"on-demand", "spot"},
	}
	t := instancetype.FromEC2(info, nil)
	capacity := t.Capacity(catalog.KubeletSettings{})
	fmt.Println(t.Labels()["karpenter.k8s.aws/instance-family"], t.Arch, capacity.Pods().String(), capacity.Memory().String())
	// Output: m7g arm64 29 7518Mi
}
