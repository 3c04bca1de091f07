package cmdutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
)

// KubeconfigFlagUsage is the help text of every read-only command's
// --kubeconfig flag.
const KubeconfigFlagUsage = "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)"

// RESTConfig loads the client configuration of the commands that read a
// cluster: the --kubeconfig path when given, else $KUBECONFIG, else
// ~/.kube/config; kubeContext selects a context ("" the current one). A
// path that does not exist, or no kubeconfig at all, is bad input naming
// the path (exit 2); so is a kubeconfig that does not parse.
func RESTConfig(path, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case path != "":
		if _, err := os.Stat(path); err != nil {
			return nil, BadInputf("--kubeconfig %s: %v", path, unwrapPath(err))
		}
		rules.ExplicitPath = path
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
		found := false
		for _, p := range filepath.SplitList(env) {
			if _, err := os.Stat(p); err == nil {
				found = true
			}
		}
		if !found {
			return nil, BadInputf("$KUBECONFIG=%s: no such file (pass --kubeconfig PATH or fix $KUBECONFIG)", env)
		}
	default:
		home := filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
		if _, err := os.Stat(home); err != nil {
			return nil, BadInputf("no kubeconfig: %s does not exist and $KUBECONFIG is not set; pass --kubeconfig PATH", home)
		}
		rules.ExplicitPath = home
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		where := path
		if where == "" {
			where = strings.Join(rules.GetLoadingPrecedence(), string(filepath.ListSeparator))
		}
		return nil, BadInputf("kubeconfig %s: %v", where, err)
	}
	return cfg, nil
}

// Client builds an uncached client for cfg that knows the built-in kinds
// and dovetail's (NodePool, NodeClaim, EC2NodeClass, NodeOverlay).
func Client(cfg *rest.Config) (client.Client, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
