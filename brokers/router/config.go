package router

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/brokers/aliyun"
	"github.com/sluicehq/sluice/brokers/autodl"
	"github.com/sluicehq/sluice/brokers/ec2"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/brokers/runpod"
	"github.com/sluicehq/sluice/brokers/vast"
	"github.com/sluicehq/sluice/config"
)

// Options are what FromConfig needs beyond the config file.
type Options struct {
	// Getenv reads the credential variables named by config
	// (Provider.CredentialEnv / SecretEnv); default: none set.
	Getenv func(string) string
	// Endpoints override config's Provider.Endpoint per provider (tests, the
	// loopback fakes of cmd/fakeproviders). Same meaning as the config field:
	// aws the EC2 endpoint, runpod the GraphQL URL, the others the base URL.
	Endpoints map[string]string
	// Records gives the bid limits (see Router.Records).
	Records Records
	// Images are the machine / container image per provider (EC2 ImageId,
	// ECS ImageId, RunPod imageName, Vast image, AutoDL image_uuid); a
	// provider without one uses its adapter's default.
	Images map[string]string
	// AliyunSecurityGroupID and AliyunVSwitchID are sent with ECS
	// RunInstances (aliyun.Config SecurityGroupID, VSwitchID); "" = not sent.
	AliyunSecurityGroupID, AliyunVSwitchID string
	// HTTPClient is used by the non-AWS adapters (default: 30 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// FromConfig builds a Router with one adapter per enabled provider of cfg.
// AWS uses static credentials when CredentialEnv and SecretEnv name set
// variables, else the SDK's default chain.
func FromConfig(ctx context.Context, cfg *config.Config, o Options) (*Router, error) {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	env := func(name string) string {
		if name == "" {
			return ""
		}
		return o.Getenv(name)
	}
	var adapters []placement.Adapter
	for _, name := range config.Providers {
		p, ok := cfg.Providers[name]
		if !ok || !p.Enabled {
			continue
		}
		endpoint := p.Endpoint
		if u, ok := o.Endpoints[name]; ok {
			endpoint = u
		}
		a, err := build(ctx, name, endpoint, env(p.CredentialEnv), env(p.SecretEnv), p, o)
		if err != nil {
			return nil, fmt.Errorf("broker %s: %w", name, err)
		}
		if a != nil {
			adapters = append(adapters, a)
		}
	}
	return New(o.Records, adapters...), nil
}

// builders are the adapters by provider; each file of this package that
// knows one registers it.
var builders = map[string]func(ctx context.Context, endpoint, key, secret string, p config.Provider, o Options) (placement.Adapter, error){
	"aws": func(ctx context.Context, endpoint, key, secret string, p config.Provider, o Options) (placement.Adapter, error) {
		if key == "" && secret == "" && loopback(endpoint) {
			// A loopback fake (cmd/fakeproviders) needs a signed request,
			// not real credentials: never look the real ones up for it.
			key, secret = "AKIDLOOPBACKFAKE", "loopback-fake"
		}
		return ec2.New(ctx, ec2.Config{Endpoint: endpoint, AccessKeyID: key, SecretAccessKey: secret, Regions: p.Regions,
			ImageID: o.Images["aws"], Now: o.Now})
	},
	"aliyun": func(_ context.Context, endpoint, key, secret string, p config.Provider, o Options) (placement.Adapter, error) {
		return aliyun.New(aliyun.Config{Endpoint: endpoint, AccessKeyID: key, AccessKeySecret: secret, Regions: p.Regions,
			ImageID: o.Images["aliyun"], SecurityGroupID: o.AliyunSecurityGroupID, VSwitchID: o.AliyunVSwitchID,
			HTTPClient: o.HTTPClient, Now: o.Now}), nil
	},
	"runpod": func(_ context.Context, endpoint, key, _ string, _ config.Provider, o Options) (placement.Adapter, error) {
		return runpod.New(runpod.Config{URL: endpoint, APIKey: key, ImageName: o.Images["runpod"], HTTPClient: o.HTTPClient, Now: o.Now}), nil
	},
	"vast": func(_ context.Context, endpoint, key, _ string, _ config.Provider, o Options) (placement.Adapter, error) {
		return vast.New(vast.Config{BaseURL: endpoint, APIKey: key, Image: o.Images["vast"], HTTPClient: o.HTTPClient, Now: o.Now}), nil
	},
	"autodl": func(_ context.Context, endpoint, key, _ string, _ config.Provider, o Options) (placement.Adapter, error) {
		return autodl.New(autodl.Config{BaseURL: endpoint, Token: key, ImageUUID: o.Images["autodl"], HTTPClient: o.HTTPClient, Now: o.Now}), nil
	},
}

// loopback reports whether u is an http URL on 127.0.0.1, ::1 or localhost.
func loopback(u string) bool {
	x, err := url.Parse(u)
	if err != nil || x.Scheme != "http" {
		return false
	}
	h := x.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

func build(ctx context.Context, name, endpoint, key, secret string, p config.Provider, o Options) (placement.Adapter, error) {
	b, ok := builders[name]
	if !ok {
		return nil, nil // no placement adapter for this provider (quotes only)
	}
	return b(ctx, endpoint, key, secret, p, o)
}
