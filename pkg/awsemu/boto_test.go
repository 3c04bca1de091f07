package awsemu_test

import (
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// TestEveryOperationThroughBoto3 drives each operation with botocore, an
// implementation of the wire protocols independent of aws-sdk-go-v2.
func TestEveryOperationThroughBoto3(t *testing.T) {
	e := start(t, awsemu.Options{})
	out := boto(t, e, `
ec2, iam, ssm, sqs = client('ec2'), client('iam'), client('ssm'), client('sqs')
# instance types: filtered and paged
arm = []
for page in ec2.get_paginator('describe_instance_types').paginate(
        Filters=[{'Name': 'processor-info.supported-architecture', 'Values': ['arm64']},
                 {'Name': 'instance-type', 'Values': ['m7g.*']}], PaginationConfig={'PageSize': 5}):
    arm += [t['InstanceType'] for t in page['InstanceTypes']]
out['m7g'] = sorted(arm)
out['azs'] = [z['ZoneName'] for z in ec2.describe_availability_zones()['AvailabilityZones']]
out['vpcs'] = len(ec2.describe_vpcs()['Vpcs'])
# a launch template, a fleet, tags, termination
img = ssm.get_parameter(Name='/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/recommended/image_id')['Parameter']['Value']
lt = ec2.create_launch_template(LaunchTemplateName='boto', LaunchTemplateData={'ImageId': img, 'UserData': 'IyEvYmluL2Jhc2gK'})['LaunchTemplate']
subnet = ec2.describe_subnets(Filters=[{'Name': 'tag:karpenter.sh/discovery', 'Values': ['local']}])['Subnets'][0]['SubnetId']
fleet = ec2.create_fleet(Type='instant',
    LaunchTemplateConfigs=[{'LaunchTemplateSpecification': {'LaunchTemplateId': lt['LaunchTemplateId'], 'Version': '$Latest'},
                            'Overrides': [{'InstanceType': 'm7g.large', 'SubnetId': subnet}, {'InstanceType': 'm7g.xlarge', 'SubnetId': subnet}]}],
    TargetCapacitySpecification={'TotalTargetCapacity': 1, 'DefaultTargetCapacityType': 'spot'},
    TagSpecifications=[{'ResourceType': 'instance', 'Tags': [{'Key': 'karpenter.sh/nodepool', 'Value': 'boto'}]}])
iid = fleet['Instances'][0]['InstanceIds'][0]
out['launched'] = fleet['Instances'][0]['InstanceType']
ec2.create_tags(Resources=[iid], Tags=[{'Key': 'Name', 'Value': 'n1'}])
inst = ec2.describe_instances(Filters=[{'Name': 'tag:karpenter.sh/nodepool', 'Values': ['boto']}])['Reservations'][0]['Instances'][0]
out['tags'] = sorted(t['Key'] + '=' + t['Value'] for t in inst['Tags'])
out['lifecycle'] = inst.get('InstanceLifecycle')
out['terminate'] = ec2.terminate_instances(InstanceIds=[iid])['TerminatingInstances'][0]['CurrentState']['Name']
out['lts'] = len(ec2.describe_launch_templates(LaunchTemplateIds=[lt['LaunchTemplateId']])['LaunchTemplates'])
ec2.delete_launch_template(LaunchTemplateName='boto')
out['lt_gone'] = code(ec2.describe_launch_templates, LaunchTemplateNames=['boto'])
out['spot'] = len(ec2.describe_spot_price_history(InstanceTypes=['m7g.large'], ProductDescriptions=['Linux/UNIX'])['SpotPriceHistory'])
# IAM round trip
iam.create_instance_profile(InstanceProfileName='boto', Path='/dovetail/')
iam.tag_instance_profile(InstanceProfileName='boto', Tags=[{'Key': 'a', 'Value': 'b'}])
iam.add_role_to_instance_profile(InstanceProfileName='boto', RoleName='KarpenterNodeRole-local')
out['conflict'] = code(iam.delete_instance_profile, InstanceProfileName='boto')
p = iam.get_instance_profile(InstanceProfileName='boto')['InstanceProfile']
out['profile'] = [p['Path'], p['Roles'][0]['RoleName'], p['Tags'][0]['Key']]
iam.remove_role_from_instance_profile(InstanceProfileName='boto', RoleName='KarpenterNodeRole-local')
iam.delete_instance_profile(InstanceProfileName='boto')
out['profile_gone'] = code(iam.get_instance_profile, InstanceProfileName='boto')
out['params'] = len(ssm.get_parameters(Names=['/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/image_id', '/nope'])['Parameters'])
`)
	var wantM7g []any
	for _, ty := range catalog.Builtin().OfferedTypes("us-east-1", "") {
		if strings.HasPrefix(ty.Name, "m7g.") {
			wantM7g = append(wantM7g, ty.Name)
		}
	}
	if got, _ := out["m7g"].([]any); len(got) != len(wantM7g) || len(got) == 0 {
		t.Errorf("m7g types %v, want %v", out["m7g"], wantM7g)
	}
	if azs, _ := out["azs"].([]any); len(azs) != len(catalog.Builtin().Zones("us-east-1")) {
		t.Errorf("zones %v", out["azs"])
	}
	checks := map[string]any{
		"vpcs": float64(1), "launched": "m7g.large", "lifecycle": "spot", "terminate": "shutting-down", "lts": float64(1),
		"lt_gone": "InvalidLaunchTemplateName.NotFoundException", "conflict": "DeleteConflict", "profile_gone": "NoSuchEntity",
		"params": float64(1),
	}
	for k, v := range checks {
		if out[k] != v {
			t.Errorf("%s: %v, want %v", k, out[k], v)
		}
	}
	if tags, _ := out["tags"].([]any); len(tags) != 2 || tags[0] != "Name=n1" || tags[1] != "karpenter.sh/nodepool=boto" {
		t.Errorf("tags %v", out["tags"])
	}
	if p, _ := out["profile"].([]any); len(p) != 3 || p[0] != "/dovetail/" || p[1] != "KarpenterNodeRole-local" || p[2] != "a" {
		t.Errorf("profile %v", out["profile"])
	}
	if n, _ := out["spot"].(float64); int(n) < 1 {
		t.Errorf("spot prices %v", out["spot"])
	}
}
