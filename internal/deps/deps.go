//go:build tools

// Package deps pins modules that packages under construction will import, so
// that `go mod tidy` keeps them while the code that uses them lands.
package deps

import (
	_ "github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/ec2"
	_ "github.com/aws/aws-sdk-go-v2/service/eks"
	_ "github.com/aws/aws-sdk-go-v2/service/iam"
	_ "github.com/aws/aws-sdk-go-v2/service/pricing"
	_ "github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "github.com/aws/aws-sdk-go-v2/service/ssm"
	_ "github.com/aws/smithy-go"
	_ "github.com/go-logr/logr"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/robfig/cron/v3"
	_ "github.com/spf13/cobra"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/component-helpers/scheduling/corev1"
	_ "k8s.io/utils/ptr"
	_ "pgregory.net/rapid"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/yaml"
)
