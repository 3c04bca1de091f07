package controlplane

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/dovetail-sh/dovetail/api/crds"
)

func (c *ControlPlane) installCRDs(ctx context.Context) error {
	objs, err := crds.Objects()
	if err != nil {
		return fmt.Errorf("loading dovetail's CRDs: %w", err)
	}
	begin := time.Now()
	if err := InstallCRDs(ctx, c.RESTConfig(), objs); err != nil {
		return err
	}
	c.logf("%d CRDs established in %s", len(objs), since(begin))
	return nil
}

// InstallCRDs creates (or updates) the given CRDs and waits until the API
// server serves every one of them (condition Established).
func InstallCRDs(ctx context.Context, cfg *rest.Config, objs []*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range objs {
		_, err := api.Create(ctx, crd.DeepCopy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cur, getErr := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if getErr != nil {
				return fmt.Errorf("installing CRD %s: %w", crd.Name, getErr)
			}
			upd := crd.DeepCopy()
			upd.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, upd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range objs {
		name := crd.Name
		err := poll(ctx, componentTimeout, func(ctx context.Context) (bool, error) {
			cur, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range cur.Status.Conditions {
				if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
					return false, fmt.Errorf("names not accepted: %s", cond.Message)
				}
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}, "CRD "+name+" to be established")
		if err != nil {
			return err
		}
	}
	return nil
}
