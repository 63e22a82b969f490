package main

import (
	"context"

	"github.com/spf13/pflag"

	// Internal to cert-manager: build.sh names this module under cert-manager's module path so
	// that Go lets it use the webhook's own admission chain (validation, defaulting, the
	// CertificateRequest identity and approval checks), as cert-manager's own binaries do.
	"github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/webhook/options"
)

func runWebhook(ctx context.Context, args []string) error {
	config, err := options.NewWebhookConfiguration()
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	options.AddConfigFlags(fs, config)
	if err := fs.Parse(args); err != nil {
		return err
	}
	// AddConfigFlags added cert-manager's logging flags
	if err := logf.ValidateAndApply(&config.Logging); err != nil {
		return err
	}
	server, err := webhook.NewCertManagerWebhookServer(logf.FromContext(ctx), *config)
	if err != nil {
		return err
	}
	return server.Run(ctx)
}
