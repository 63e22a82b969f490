// Test tooling for the e2e suites, not part of Outrigger: one binary that runs the three parts
// of cert-manager the chart's certificates.mode=cert-manager relies on, assembled from the
// packages of the cert-manager Go module (its own cmd/ binaries are modules the proxy does not
// serve). The first argument names the part:
//
//	cert-manager controller  [--cluster-resource-namespace NS] [--workers N]
//	cert-manager webhook     [cert-manager's webhook flags: --secure-port, --dynamic-serving-...]
//	cert-manager cainjector  [--health-port N]
//
// and every part takes cert-manager's logging flags (-v=2 shows its info logs).
// Each runs until SIGTERM. No leader election: the e2e install runs one replica of each.
// build.sh builds it (module path and go.mod: see there).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

var parts = map[string]func(context.Context, []string) error{
	"controller": runController,
	"webhook":    runWebhook,
	"cainjector": runCAInjector,
}

func main() {
	if len(os.Args) < 2 || parts[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: cert-manager controller|webhook|cainjector [flags]")
		os.Exit(2)
	}
	logf.InitLogs()
	defer logf.FlushLogs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, os.Args[1])
	if err := parts[os.Args[1]](ctx, os.Args[2:]); err != nil {
		logf.Log.Error(err, "exiting", "part", os.Args[1])
		logf.FlushLogs()
		os.Exit(1)
	}
}

// flags is a part's flag set, with cert-manager's logging flags (-v and others) beside its
// own; the function returned applies those once the flags are parsed.
func flags(part string) (*pflag.FlagSet, func() error) {
	fs := pflag.NewFlagSet(part, pflag.ContinueOnError)
	logging := logsapi.NewLoggingConfiguration()
	logf.AddFlags(logging, fs)
	return fs, func() error { return logf.ValidateAndApply(logging) }
}
