package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The issuer types the e2e install uses register themselves with the issuers controllers.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The control loops Outrigger's Certificates need: Issuers and ClusterIssuers (selfSigned, ca)
// made Ready, CertificateRequests approved and signed by those issuers, and the Certificate
// life cycle (trigger, key, request, issuing, readiness, old requests pruned).
var loops = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	approver.ControllerName,
	crselfsigned.CRControllerName,
	crca.CRControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func runController(ctx context.Context, args []string) error {
	fs, applyLogging := flags("controller")
	resourceNamespace := fs.String("cluster-resource-namespace", "kube-system",
		"where ClusterIssuers' Secrets live")
	workers := fs.Int("workers", 2, "workers per control loop")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyLogging(); err != nil {
		return err
	}
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: *resourceNamespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	known := controllerpkg.Known()
	running := make([]controllerpkg.Interface, 0, len(loops))
	for _, name := range loops {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("cert-manager has no control loop %q", name)
		}
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("control loop %s: %w", name, err)
		}
		running = append(running, loop)
	}
	// The loops registered their informers with the shared factories while being built: start
	// those now (every Context the factory builds shares them).
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	logf.FromContext(ctx).Info("control loops starting", "loops", loops)
	group, groupCtx := errgroup.WithContext(ctx)
	for _, loop := range running {
		group.Go(func() error { return loop.Run(*workers, groupCtx) })
	}
	return group.Wait()
}
