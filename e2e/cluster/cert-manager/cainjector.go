package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

// runCAInjector writes CAs into the webhook configurations that ask for one (the annotations
// cert-manager.io/inject-ca-from, inject-ca-from-secret): Outrigger's, and cert-manager's own.
func runCAInjector(ctx context.Context, args []string) error {
	fs, applyLogging := flags("cainjector")
	healthPort := fs.Int("health-port", 9403, "port of /healthz and /readyz")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyLogging(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kscheme.AddToScheme, apiext.AddToScheme, cmapi.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	ctrl.SetLogger(logf.FromContext(ctx))
	config, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// its field manager, cert-manager-cainjector, comes from the user agent
	config = util.RestConfigWithUserAgent(config, "cainjector")
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: fmt.Sprintf(":%d", *healthPort),
		// The injectors watch Secrets' metadata only and read the one they need directly.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	if err := manager.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := manager.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	err = cainjector.RegisterAllInjectors(ctx, manager, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
		},
	})
	if err != nil {
		return err
	}
	return manager.Start(ctx)
}
