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

// TestResponsesMatchTheModels sends the SSM, IAM and Pricing calls a
// controller makes through botocore and checks each raw answer against
// the operation's output shape in botocore's model: every JSON key or XML
// element is a member of its shape (by its wire name), and every JSON
// scalar has the member's type. botocore itself drops unknown members
// silently, so the raw body is checked.
func TestResponsesMatchTheModels(t *testing.T) {
	e := start(t, awsemu.Options{})
	out := boto(t, e, `
import xml.etree.ElementTree as ET
scalars = {'string': str, 'integer': int, 'long': int, 'boolean': bool, 'double': (int, float), 'float': (int, float), 'timestamp': (int, float, str)}
def check_json(shape, v, path, bad):
    t = shape.type_name
    if t == 'structure':
        if not isinstance(v, dict):
            bad.append(path + ': not an object'); return
        for k, x in v.items():
            if k not in shape.members:
                bad.append(path + '.' + k + ': not in the model'); continue
            check_json(shape.members[k], x, path + '.' + k, bad)
    elif t == 'list':
        for x in v: check_json(shape.member, x, path + '[]', bad)
    elif t == 'map':
        for k, x in v.items(): check_json(shape.value, x, path + '{' + k + '}', bad)
    elif t in scalars and (not isinstance(v, scalars[t]) or (t != 'boolean' and isinstance(v, bool))):
        bad.append('%s: %r is not a %s' % (path, v, t))
def wire(name, m):
    return m.serialization.get('name', name)
def check_xml(shape, el, path, bad):
    t = shape.type_name
    if t == 'structure':
        names = {wire(n, m): m for n, m in shape.members.items()}
        for c in el:
            tag = c.tag.split('}')[-1]
            if tag not in names:
                bad.append(path + '.' + tag + ': not in the model'); continue
            check_xml(names[tag], c, path + '.' + tag, bad)
    elif t == 'list':
        for c in el: check_xml(shape.member, c, path + '[]', bad)
def checked(svc, op, call, **kw):
    c = client(svc)
    raw = {}
    c.meta.events.register('after-call', lambda http_response, **_: raw.update(body=http_response.content))
    getattr(c, call)(**kw)
    shape = c.meta.service_model.operation_model(op).output_shape
    bad = []
    if c.meta.service_model.protocol == 'json':
        check_json(shape, json.loads(raw['body']), op, bad)
    else:
        root = ET.fromstring(raw['body'])
        result = [x for x in root if x.tag.split('}')[-1] == op + 'Result']
        if shape is not None:
            if not result:
                bad.append(op + ': no ' + op + 'Result element')
            else:
                check_xml(shape, result[0], op, bad)
    out.setdefault('bad', []).extend(bad)
    out.setdefault('ops', []).append(op)
# The checks must be able to fail: an unknown member and a mistyped one.
probe = []
check_json(client('ssm').meta.service_model.operation_model('GetParameter').output_shape, {'Parameter': {'Bogus': 1, 'Version': '1'}}, 'probe', probe)
out['probe'] = len(probe)
name = '/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id'
checked('ssm', 'GetParameter', 'get_parameter', Name=name)
checked('ssm', 'GetParameters', 'get_parameters', Names=[name, '/nope'])
checked('pricing', 'GetProducts', 'get_products', ServiceCode='AmazonEC2', MaxResults=2,
        Filters=[{'Type': 'TERM_MATCH', 'Field': 'instanceType', 'Value': 'm5.large'}])
checked('iam', 'CreateInstanceProfile', 'create_instance_profile', InstanceProfileName='shape', Path='/dovetail/')
checked('iam', 'TagInstanceProfile', 'tag_instance_profile', InstanceProfileName='shape', Tags=[{'Key': 'a', 'Value': 'b'}])
checked('iam', 'AddRoleToInstanceProfile', 'add_role_to_instance_profile', InstanceProfileName='shape', RoleName='KarpenterNodeRole-local')
checked('iam', 'GetInstanceProfile', 'get_instance_profile', InstanceProfileName='shape')
checked('iam', 'ListInstanceProfiles', 'list_instance_profiles', PathPrefix='/dovetail/')
checked('iam', 'RemoveRoleFromInstanceProfile', 'remove_role_from_instance_profile', InstanceProfileName='shape', RoleName='KarpenterNodeRole-local')
checked('iam', 'DeleteInstanceProfile', 'delete_instance_profile', InstanceProfileName='shape')
`)
	if out["probe"] != float64(2) {
		t.Fatalf("the shape check found %v faults in a made-up answer with two", out["probe"])
	}
	if ops, _ := out["ops"].([]any); len(ops) != 10 {
		t.Fatalf("checked %v, want 10 operations", out["ops"])
	}
	if bad, _ := out["bad"].([]any); len(bad) > 0 {
		for _, b := range bad {
			t.Errorf("answer differs from the model: %v", b)
		}
	}
}
