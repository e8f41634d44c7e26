// Command webhook is cert-manager's admission webhook as CAPTF's local
// environment runs it: the server, its admission chain, conversion and its
// dynamic serving CA are cert-manager's own packages at the version pinned
// in this module's go.mod, and the flags are cert-manager's own flag set
// (pkg/webhook/options); this file reads a --config file first, applies the
// flags over it and runs the server.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	config "github.com/cert-manager/cert-manager/internal/apis/config/webhook"
	"github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
	"github.com/cert-manager/cert-manager/pkg/webhook/configfile"
	"github.com/cert-manager/cert-manager/pkg/webhook/options"
)

func main() {
	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := configure(os.Args[1:])
	if err == nil {
		err = run(ctx, cfg)
	}
	logf.FlushLogs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager webhook: %v\n", err)
		os.Exit(1)
	}
}

func configure(args []string) (*config.WebhookConfiguration, error) {
	flags := options.NewWebhookFlags()
	pre := pflag.NewFlagSet("config", pflag.ContinueOnError)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	pre.Usage = func() {}
	flags.AddFlags(pre)
	_ = pre.Parse(args)

	cfg, err := options.NewWebhookConfiguration()
	if err != nil {
		return nil, err
	}
	if flags.Config != "" {
		data, err := os.ReadFile(flags.Config)
		if err != nil {
			return nil, fmt.Errorf("read the config file: %w", err)
		}
		file := configfile.New()
		if err := file.DecodeAndConfigure(data); err != nil {
			return nil, fmt.Errorf("decode the config file %s: %w", flags.Config, err)
		}
		cfg = file.Config
	}

	fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	flags.AddFlags(fs)
	options.AddConfigFlags(fs, cfg)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := logf.ValidateAndApply(&cfg.Logging); err != nil {
		return nil, err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		return nil, fmt.Errorf("feature gates: %w", err)
	}
	return cfg, nil
}

func run(ctx context.Context, cfg *config.WebhookConfiguration) error {
	log := logf.Log.WithName("webhook")
	ctx = logf.NewContext(ctx, log)
	log.Info("Starting cert-manager webhook", "version", util.AppVersion)
	srv, err := webhook.NewCertManagerWebhookServer(log, *cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
