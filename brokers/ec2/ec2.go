// Package ec2 places AWS EC2 plan lines (providers.md §1.3, §1.4) through
// aws-sdk-go-v2: RunInstances with a ClientToken (sluice.ClientToken, EC2's
// own idempotency key) and TagSpecifications (sluice:decision, sluice:line,
// sluice:token) — for spot lines InstanceMarketOptions spot with MaxPrice (a
// string, USD per instance-hour, > 0.001; brokers/bid); for reserved lines
// PurchaseCapacityBlock then RunInstances into the block (market
// capacity-block). Find looks instances up by the client-token filter (and
// blocks by tag); Release is TerminateInstances; Instances lists instances
// with the sluice:decision tag.
//
// After placement the market is read back from the instance
// (instanceLifecycle) and, for spot, the price from DescribeSpotPriceHistory
// in the instance's zone (what a spot instance pays); beyond the tolerance
// the instances are terminated at once and Place returns a
// *placement.MismatchError (sluice.ErrPriceMismatch). EC2 has no per-instance
// price for on-demand or capacity-block instances: their price is the line's.
//
// Billing: per second, 60 s minimum (Linux; brokers/billing "aws").
package ec2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sdkec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/pricing"
)

// Provider is the provider name.
const Provider = "aws"

// Currency of commercial-region prices.
const Currency = "USD"

// DefaultImageID asks EC2 to resolve the AMI from a public SSM parameter
// (RunInstances accepts "resolve:ssm:<parameter>" as ImageId). Set
// Config.ImageID to the training image in production.
const DefaultImageID = "resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"

// API is the EC2 operations the adapter uses; *ec2.Client has them.
type API interface {
	RunInstances(ctx context.Context, in *sdkec2.RunInstancesInput, optFns ...func(*sdkec2.Options)) (*sdkec2.RunInstancesOutput, error)
	DescribeInstances(ctx context.Context, in *sdkec2.DescribeInstancesInput, optFns ...func(*sdkec2.Options)) (*sdkec2.DescribeInstancesOutput, error)
	TerminateInstances(ctx context.Context, in *sdkec2.TerminateInstancesInput, optFns ...func(*sdkec2.Options)) (*sdkec2.TerminateInstancesOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *sdkec2.DescribeSpotPriceHistoryInput, optFns ...func(*sdkec2.Options)) (*sdkec2.DescribeSpotPriceHistoryOutput, error)
	PurchaseCapacityBlock(ctx context.Context, in *sdkec2.PurchaseCapacityBlockInput, optFns ...func(*sdkec2.Options)) (*sdkec2.PurchaseCapacityBlockOutput, error)
	DescribeCapacityReservations(ctx context.Context, in *sdkec2.DescribeCapacityReservationsInput, optFns ...func(*sdkec2.Options)) (*sdkec2.DescribeCapacityReservationsOutput, error)
}

var _ API = (*sdkec2.Client)(nil)

// Config configures the adapter.
type Config struct {
	// Endpoint overrides the EC2 endpoint (BaseEndpoint) for every region, for
	// a loopback fake; "" is the SDK default per region.
	Endpoint string
	// AccessKeyID and SecretAccessKey are static credentials; both empty uses
	// the SDK's default chain.
	AccessKeyID, SecretAccessKey string
	// Regions are the regions Instances lists (default us-east-1, us-west-2).
	Regions []string
	// ImageID is the AMI (default DefaultImageID).
	ImageID string
	// Tolerance is the relative price read-back tolerance (default placement.DefaultTolerance).
	Tolerance decimal.Decimal
	// RetryMaxAttempts is the SDK's attempts per call (default 1: the burst
	// retries, after a Find).
	RetryMaxAttempts int
	HTTPClient       *http.Client
	Now              func() time.Time
}

// Adapter is the EC2 placement.Adapter.
type Adapter struct {
	cfg Config
	mu  sync.Mutex
	api map[string]API // by region
	new func(region string) API
}

var _ placement.Adapter = (*Adapter)(nil)

// New builds an adapter whose per-region clients are created on first use.
func New(ctx context.Context, cfg Config) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, errors.New("aws: AccessKeyID and SecretAccessKey must be set together")
	}
	var awsCfg aws.Config
	if cfg.AccessKeyID != "" {
		awsCfg = aws.Config{Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")}
	} else {
		var err error
		if awsCfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("aws: loading SDK config: %w", err)
		}
	}
	if cfg.HTTPClient != nil {
		awsCfg.HTTPClient = cfg.HTTPClient
	}
	awsCfg.RetryMaxAttempts = cfg.RetryMaxAttempts
	a := &Adapter{cfg: cfg, api: map[string]API{}}
	a.new = func(region string) API {
		return sdkec2.NewFromConfig(awsCfg, func(o *sdkec2.Options) {
			o.Region = region
			if cfg.Endpoint != "" {
				o.BaseEndpoint = aws.String(cfg.Endpoint)
			}
		})
	}
	return a, nil
}

// NewWithAPI is an adapter calling api for every region (tests).
func NewWithAPI(cfg Config, api API) *Adapter {
	return &Adapter{cfg: cfg.withDefaults(), api: map[string]API{}, new: func(string) API { return api }}
}

func (c Config) withDefaults() Config {
	if len(c.Regions) == 0 {
		c.Regions = []string{"us-east-1", "us-west-2"}
	}
	if c.ImageID == "" {
		c.ImageID = DefaultImageID
	}
	if c.RetryMaxAttempts <= 0 {
		c.RetryMaxAttempts = 1
	}
	c.Tolerance, c.Now = placement.OrTolerance(c.Tolerance), placement.OrNow(c.Now)
	return c
}

func (a *Adapter) client(region string) API {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.api[region]
	if !ok {
		c = a.new(region)
		a.api[region] = c
	}
	return c
}

// Provider is "aws".
func (a *Adapter) Provider() string { return Provider }

// Billing is per second with a 60 s minimum (brokers/billing).
func (a *Adapter) Billing() (granularity, minimum time.Duration) { return placement.Billing(Provider) }

// offerRef is what an EC2 offer id says: "aws:<region>:<az>:<type>:spot",
// "aws:<region>:<type>:on-demand", "aws:<region>:<az>:<type>:reserved:<offering>".
type offerRef struct {
	Region, AZ, Type, Offering string
}

func parseOfferID(id string) (offerRef, error) {
	parts := strings.Split(id, ":")
	bad := fmt.Errorf("aws: offer id %q: not an EC2 offer id: %w", id, sluice.ErrQuota)
	if len(parts) < 4 || parts[0] != Provider {
		return offerRef{}, bad
	}
	switch {
	case len(parts) == 4 && parts[3] == string(sluice.OnDemand):
		return offerRef{Region: parts[1], Type: parts[2]}, nil
	case len(parts) == 5 && parts[4] == string(sluice.Spot):
		return offerRef{Region: parts[1], AZ: parts[2], Type: parts[3]}, nil
	case len(parts) == 6 && parts[4] == string(sluice.Reserved) && parts[5] != "":
		return offerRef{Region: parts[1], AZ: parts[2], Type: parts[3], Offering: parts[5]}, nil
	}
	return offerRef{}, bad
}

func tagSpec(resource types.ResourceType, decisionID string, lineNo int) types.TagSpecification {
	ts := types.TagSpecification{ResourceType: resource}
	tags := placement.Tags(decisionID, lineNo)
	for _, k := range []string{placement.TagDecision, placement.TagLine, placement.TagToken} {
		ts.Tags = append(ts.Tags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return ts
}

// Place buys line (see the package doc). A spot bid that breaks a rule is
// refused before any call (sluice.ErrBidOutOfRange).
func (a *Adapter) Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line, lim bid.Limits) (sluice.Placement, error) {
	s, err := placement.Begin(Provider, parseOfferID, nil, decisionID, lineNo, line, lim, a.cfg.Now())
	ref, p, b := s.Ref, s.Placement, s.Bid
	if err != nil {
		return p, err
	}
	if line.Units < 1 {
		return p, fmt.Errorf("aws %s: %d units: %w", p.ClientToken, line.Units, sluice.ErrQuota)
	}
	api := a.client(ref.Region)
	token := p.ClientToken
	in := &sdkec2.RunInstancesInput{
		ImageId: aws.String(a.cfg.ImageID), InstanceType: types.InstanceType(ref.Type),
		MinCount: aws.Int32(int32(line.Units)), MaxCount: aws.Int32(int32(line.Units)),
		ClientToken:       aws.String(token),
		TagSpecifications: []types.TagSpecification{tagSpec(types.ResourceTypeInstance, decisionID, lineNo)},
	}
	if ref.AZ != "" {
		in.Placement = &types.Placement{AvailabilityZone: aws.String(ref.AZ)}
	}
	switch line.Market {
	case sluice.Spot:
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{MarketType: types.MarketTypeSpot,
			SpotOptions: &types.SpotMarketOptions{MaxPrice: aws.String(b.Text), SpotInstanceType: types.SpotInstanceTypeOneTime,
				InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate}}
	case sluice.Reserved:
		if line.Units != 1 {
			return p, fmt.Errorf("aws %s: a capacity block is bought whole: %d units: %w", token, line.Units, sluice.ErrQuota)
		}
		cr, err := a.block(ctx, api, ref, decisionID, lineNo)
		if err != nil {
			return p, err
		}
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{MarketType: types.MarketTypeCapacityBlock}
		in.CapacityReservationSpecification = &types.CapacityReservationSpecification{
			CapacityReservationTarget: &types.CapacityReservationTarget{CapacityReservationId: aws.String(cr)}}
		in.Placement = nil // the block's zone
	}
	out, err := api.RunInstances(ctx, in)
	if err != nil {
		return p, classify("RunInstances", err)
	}
	if len(out.Instances) == 0 {
		return p, fmt.Errorf("aws RunInstances %s: no instances in the answer: %w", token, sluice.ErrTransient)
	}
	insts := out.Instances
	return a.readBack(ctx, api, p, line, ref, insts)
}

// block returns the capacity reservation bought for (decision, line),
// buying the offering when none is tagged yet (PurchaseCapacityBlock has no
// client token: the tag look-up makes it idempotent).
func (a *Adapter) block(ctx context.Context, api API, ref offerRef, decisionID string, lineNo int) (string, error) {
	if cr, ok, err := a.findBlock(ctx, api, decisionID, lineNo); err != nil || ok {
		return cr, err
	}
	out, err := api.PurchaseCapacityBlock(ctx, &sdkec2.PurchaseCapacityBlockInput{
		CapacityBlockOfferingId: aws.String(ref.Offering), InstancePlatform: types.CapacityReservationInstancePlatformLinuxUnix,
		TagSpecifications: []types.TagSpecification{tagSpec(types.ResourceTypeCapacityReservation, decisionID, lineNo)},
	})
	if err != nil {
		return "", classify("PurchaseCapacityBlock", err)
	}
	if out.CapacityReservation == nil || aws.ToString(out.CapacityReservation.CapacityReservationId) == "" {
		return "", fmt.Errorf("aws PurchaseCapacityBlock %s: no capacity reservation in the answer: %w", ref.Offering, sluice.ErrTransient)
	}
	return aws.ToString(out.CapacityReservation.CapacityReservationId), nil
}

func (a *Adapter) findBlock(ctx context.Context, api API, decisionID string, lineNo int) (string, bool, error) {
	out, err := api.DescribeCapacityReservations(ctx, &sdkec2.DescribeCapacityReservationsInput{Filters: []types.Filter{
		{Name: aws.String("tag:" + placement.TagToken), Values: []string{sluice.ClientToken(decisionID, lineNo)}}}})
	if err != nil {
		return "", false, classify("DescribeCapacityReservations", err)
	}
	for _, cr := range out.CapacityReservations {
		if id := aws.ToString(cr.CapacityReservationId); id != "" {
			return id, true, nil
		}
	}
	return "", false, nil
}

// readBack fills the placement from the instances and checks market and price.
func (a *Adapter) readBack(ctx context.Context, api API, p sluice.Placement, line sluice.Line, ref offerRef, insts []types.Instance) (sluice.Placement, error) {
	wantLife := map[sluice.Market]types.InstanceLifecycleType{sluice.Spot: types.InstanceLifecycleTypeSpot,
		sluice.Reserved: types.InstanceLifecycleTypeCapacityBlock}[line.Market]
	az := ref.AZ
	var reason string
	for _, i := range insts {
		p.ExternalIDs = append(p.ExternalIDs, aws.ToString(i.InstanceId))
		if i.InstanceLifecycle != wantLife && reason == "" {
			reason = fmt.Sprintf("instance %s lifecycle %q, want %q for a %s line", aws.ToString(i.InstanceId), i.InstanceLifecycle, wantLife, line.Market)
		}
		if i.Placement != nil && aws.ToString(i.Placement.AvailabilityZone) != "" {
			az = aws.ToString(i.Placement.AvailabilityZone)
		}
		if i.LaunchTime != nil && (p.PlacedAt.IsZero() || i.LaunchTime.Before(p.PlacedAt)) {
			p.PlacedAt = i.LaunchTime.UTC()
		}
	}
	p.Price = line.UnitPrice
	if line.Market == sluice.Spot && reason == "" {
		price, err := a.spotPrice(ctx, api, ref.Type, az)
		if err != nil {
			// The instances exist; the price is unknown. Keep them and say so:
			// the burst records the placement, the next read settles it.
			p.Price = placement.Expected(line)
			return p, nil
		}
		p.Price = price
		reason = placement.CheckPrice(line.Market, price, placement.Expected(line), a.cfg.Tolerance)
	}
	if reason != "" {
		return placement.Mismatch(ctx, p, reason, a.Release)
	}
	return p, nil
}

// spotPrice is the current spot price of typ in az (DescribeSpotPriceHistory
// with StartTime now: the last change before now), USD per instance-hour.
func (a *Adapter) spotPrice(ctx context.Context, api API, typ, az string) (sluice.Money, error) {
	now := a.cfg.Now()
	out, err := api.DescribeSpotPriceHistory(ctx, &sdkec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(typ)}, AvailabilityZone: aws.String(az),
		ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(now), EndTime: aws.Time(now)})
	if err != nil {
		return sluice.Money{}, classify("DescribeSpotPriceHistory", err)
	}
	for _, sp := range out.SpotPriceHistory {
		if string(sp.InstanceType) == typ && (aws.ToString(sp.AvailabilityZone) == az || az == "") {
			d, err := pricing.TextAmount(aws.ToString(sp.SpotPrice))
			if err != nil {
				return sluice.Money{}, fmt.Errorf("aws DescribeSpotPriceHistory %s %s: spotPrice %q: %v: %w", typ, az, aws.ToString(sp.SpotPrice), err, sluice.ErrTransient)
			}
			return sluice.Money{Amount: d, Currency: Currency}, nil
		}
	}
	return sluice.Money{}, fmt.Errorf("aws DescribeSpotPriceHistory %s %s: no price: %w", typ, az, sluice.ErrTransient)
}

// Find looks the line up by the client-token filter in every configured
// region (terminated instances included: EC2 would return them for the token
// too, so buying again is never right).
func (a *Adapter) Find(ctx context.Context, decisionID string, lineNo int) (sluice.Placement, bool, error) {
	token := sluice.ClientToken(decisionID, lineNo)
	for _, region := range a.cfg.Regions {
		insts, err := a.describe(ctx, a.client(region), []types.Filter{{Name: aws.String("client-token"), Values: []string{token}}})
		if err != nil {
			return sluice.Placement{}, false, err
		}
		if len(insts) == 0 {
			continue
		}
		p := sluice.Placement{DecisionID: decisionID, Line: lineNo, Provider: Provider, ClientToken: token, Units: len(insts)}
		for _, i := range insts {
			p.ExternalIDs = append(p.ExternalIDs, aws.ToString(i.InstanceId))
			switch i.InstanceLifecycle {
			case types.InstanceLifecycleTypeSpot:
				p.Market = sluice.Spot
			case types.InstanceLifecycleTypeCapacityBlock:
				p.Market = sluice.Reserved
			default:
				p.Market = sluice.OnDemand
			}
			if i.LaunchTime != nil && (p.PlacedAt.IsZero() || i.LaunchTime.Before(p.PlacedAt)) {
				p.PlacedAt = i.LaunchTime.UTC()
			}
			if i.Placement != nil && i.Placement.AvailabilityZone != nil && p.Market == sluice.Spot && !p.Price.IsSet() {
				if price, err := a.spotPrice(ctx, a.client(region), string(i.InstanceType), aws.ToString(i.Placement.AvailabilityZone)); err == nil {
					p.Price = price
				}
			}
		}
		return p, true, nil
	}
	return sluice.Placement{}, false, nil
}

func (a *Adapter) describe(ctx context.Context, api API, filters []types.Filter) ([]types.Instance, error) {
	var out []types.Instance
	in := &sdkec2.DescribeInstancesInput{Filters: filters}
	for page := 0; page < 100; page++ {
		res, err := api.DescribeInstances(ctx, in)
		if err != nil {
			return nil, classify("DescribeInstances", err)
		}
		for _, r := range res.Reservations {
			for _, i := range r.Instances {
				if aws.ToString(i.InstanceId) != "" { // an instance without an id cannot be acted on
					out = append(out, i)
				}
			}
		}
		if aws.ToString(res.NextToken) == "" {
			break
		}
		in.NextToken = res.NextToken
	}
	return out, nil
}

// regionsOf are the regions to look for p's instances in: the offer's
// region, or every configured region when p carries no EC2 offer id (an
// orphan found by reconcile).
func (a *Adapter) regionsOf(p sluice.Placement) []string {
	if ref, err := parseOfferID(p.OfferID); err == nil {
		return []string{ref.Region}
	}
	return a.cfg.Regions
}

// Release terminates p's instances. Confirmed when every instance answers
// shutting-down or terminated (EC2 stops billing at shutting-down), or no
// searched region knows it (InvalidInstanceID.NotFound); At is the time of
// the answer.
func (a *Adapter) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	if len(p.ExternalIDs) == 0 {
		return placement.Released(a.cfg.Now()), nil
	}
	for _, region := range a.regionsOf(p) {
		out, err := a.client(region).TerminateInstances(ctx, &sdkec2.TerminateInstancesInput{InstanceIds: p.ExternalIDs})
		if err != nil {
			var ae interface{ ErrorCode() string }
			if errors.As(err, &ae) && ae.ErrorCode() == "InvalidInstanceID.NotFound" {
				continue // not in this region (or long gone)
			}
			return sluice.ReleaseResult{}, classify("TerminateInstances", err)
		}
		gone := map[string]bool{}
		for _, c := range out.TerminatingInstances {
			if c.CurrentState != nil && (c.CurrentState.Name == types.InstanceStateNameTerminated || c.CurrentState.Name == types.InstanceStateNameShuttingDown) {
				gone[aws.ToString(c.InstanceId)] = true
			}
		}
		confirmed := true
		for _, id := range p.ExternalIDs {
			confirmed = confirmed && gone[id]
		}
		return sluice.ReleaseResult{Confirmed: confirmed, At: a.cfg.Now().UTC()}, nil
	}
	return placement.Released(a.cfg.Now()), nil
}

// Instances lists every not-terminated instance with a sluice:decision tag
// in the configured regions. Price is the current spot price for spot
// instances and zero Money otherwise (EC2 has no per-instance price).
func (a *Adapter) Instances(ctx context.Context) ([]sluice.Instance, error) {
	var out []sluice.Instance
	for _, region := range a.cfg.Regions {
		insts, err := a.describe(ctx, a.client(region), []types.Filter{
			{Name: aws.String("tag-key"), Values: []string{placement.TagDecision}},
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
		})
		if err != nil {
			return nil, err
		}
		for _, i := range insts {
			in := sluice.Instance{Provider: Provider, ExternalID: aws.ToString(i.InstanceId)}
			if i.State != nil {
				in.State = string(i.State.Name)
			}
			if i.LaunchTime != nil {
				in.LaunchedAt = i.LaunchTime.UTC()
			}
			for _, t := range i.Tags {
				switch aws.ToString(t.Key) {
				case placement.TagDecision:
					in.DecisionID = aws.ToString(t.Value)
				case placement.TagLine:
					in.Line, _ = strconv.Atoi(aws.ToString(t.Value))
				}
			}
			if i.InstanceLifecycle == types.InstanceLifecycleTypeSpot && i.Placement != nil {
				if price, err := a.spotPrice(ctx, a.client(region), string(i.InstanceType), aws.ToString(i.Placement.AvailabilityZone)); err == nil {
					in.Price = price
				}
			}
			out = append(out, in)
		}
	}
	slices.SortStableFunc(out, func(x, y sluice.Instance) int { return strings.Compare(x.ExternalID, y.ExternalID) })
	return out, nil
}
