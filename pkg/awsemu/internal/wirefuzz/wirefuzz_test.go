package wirefuzz_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// FuzzRequests sends arbitrary bodies to every protocol the emulator
// parses (EC2/IAM query strings, the JSON targets, EKS paths): it must
// answer each with an AWS error or a result, never panic or hang.
func FuzzRequests(f *testing.F) {
	seeds := []struct {
		target, path, body string
	}{
		{"", "/", "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag:a&Filter.1.Value.1=b*&MaxResults=5"},
		{"", "/", "Action=CreateFleet&Version=2016-11-15&Type=instant&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=x&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large&TargetCapacitySpecification.TotalTargetCapacity=1"},
		{"", "/", "Action=CreateFleet&Version=2016-11-15&ClientToken=tok-1&Type=instant&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=x&TargetCapacitySpecification.TotalTargetCapacity=1"},
		{"", "/", "Action=CreateLaunchTemplate&Version=2016-11-15&LaunchTemplateName=abc&LaunchTemplateData.ImageId=ami-0123456789abcdef0&LaunchTemplateData.BlockDeviceMapping.1.DeviceName=/dev/xvda&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize=x"},
		{"", "/", "Action=CreateTags&Version=2016-11-15&ResourceId.1=i-1&Tag.1.Key=&Tag.2.Value=v"},
		{"", "/", "Action=ListInstanceProfiles&Version=2010-05-08&MaxItems=0&Marker=%zz"},
		{"", "/", "Action=CreateInstanceProfile&Version=2010-05-08&InstanceProfileName=p&Tags.member.1.Key=k&Tags.member.1.Value=v"},
		{"AmazonSSM.GetParameters", "/", `{"Names":["/a","/b"]}`},
		{"AmazonSQS.ReceiveMessage", "/", `{"QueueUrl":"http://x/111122223333/local","MaxNumberOfMessages":10}`},
		{"AmazonSQS.SendMessage", "/", `{"QueueUrl":"local","MessageBody":"x","MessageAttributes":{"a":{"DataType":"Binary","BinaryValue":"AA=="}}}`},
		{"AWSPriceListService.GetProducts", "/", `{"ServiceCode":"AmazonEC2","Filters":[{"Type":"ANY_OF","Field":"instanceType","Value":"m5.large,c5.large"}],"MaxResults":2}`},
		{"", "/clusters/local", ""},
	}
	for _, s := range seeds {
		f.Add(s.target, s.path, s.body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := awsemu.Start(ctx, awsemu.Options{TimeScale: 0.001})
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	f.Fuzz(func(t *testing.T, target, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "/_dovetail") {
			path = "/" + strings.TrimPrefix(path, "/_dovetail")
		}
		req := httptest.NewRequest(http.MethodPost, "http://emulator/", strings.NewReader(body))
		req.URL.Path = path
		if strings.HasPrefix(path, "/clusters") {
			req.Method = http.MethodGet
		}
		if target != "" {
			req.Header.Set("X-Amz-Target", target)
		} else {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		// Long polls would make the fuzzer wait: keep them short.
		rctx, rcancel := context.WithTimeout(req.Context(), 100e6)
		defer rcancel()
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req.WithContext(rctx))
		if rec.Code < 200 || rec.Code >= 600 {
			t.Fatalf("status %d", rec.Code)
		}
		if rec.Code >= 400 && rec.Body.Len() == 0 && rec.Header().Get("X-Amzn-ErrorType") == "" {
			t.Fatalf("error %d without a body or error type", rec.Code)
		}
	})
}
