// Package ec2 is Sluice's quote source for AWS EC2 A100 capacity
// (p4d.24xlarge: 8 × A100-40GB, p4de.24xlarge: 8 × A100-80GB): the current
// spot price per availability zone from EC2 DescribeSpotPriceHistory, the
// on-demand list price from the AWS Price List API (pricing:GetProducts), and
// Capacity Block offerings (reserved, a fixed term paid up front) from EC2
// DescribeCapacityBlockOfferings.
//
// Both APIs send prices as text, USD per instance-hour: spotPrice "0.087000"
// (6 decimals, XML) and pricePerUnit.USD "21.9576420000" (10 decimals, inside a
// JSON document carried as a string). They are read as exact decimals from that
// text (pricing.TextAmount), never through binary floating point; the text is kept in
// Offer.RawPrice with Basis sluice.PerInstanceHour. A Capacity Block's
// upfrontFee is the TOTAL for the block, not an hourly rate: its offer's
// UnitPrice is the derived per-instance-hour rate (CapacityBlockHourly, the one
// rounding: decimal DivRound to HourlyScale = 10 places, half away from zero),
// RawPrice the fee text as sent, and Source says "upfront fee X for N h".
//
// Calls go through the AWS SDK for Go v2 behind two narrow interfaces
// (SpotPriceAPI, PriceListAPI), so tests and replays can point the real SDK at
// a loopback server (Config.EC2Endpoint, Config.PricingEndpoint) or hand in
// fakes (NewWithAPIs).
//
// Every failed call is a *CallError, classed for pricing.Classify
// (CallError.ErrorClass).
//
// Wire formats: ../shared/reference/providers.md §1.2, §1.4 and §1.5.
package ec2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sdkec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	sdkpricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/pricing"
)

// Provider is the provider name in offers.
const Provider = "aws"

// Currency of every price this source reads (commercial AWS regions).
const Currency = "USD"

// Defaults used when a Config field is zero.
const (
	DefaultMaxUnits = 2
	DefaultTTL      = 5 * time.Minute
	// DefaultRetryMaxAttempts is 1: no SDK retry. A quote source runs under a
	// short per-source deadline (pricing.Collector: 2 s); the SDK's retry
	// backoff on RequestLimitExceeded would hold the whole source past it and
	// lose the regions that did answer. The next decision asks again.
	DefaultRetryMaxAttempts = 1
	// PricingRegion is where the Price List API is called (it also serves
	// ap-south-1 and eu-central-1; all return every region's prices).
	PricingRegion = "us-east-1"
	// ProductDescription is the DescribeSpotPriceHistory product asked for.
	ProductDescription = "Linux/UNIX"
	// ServiceCode is the Price List service code for EC2.
	ServiceCode = "AmazonEC2"
	// Concurrency is the most API calls in flight at once.
	Concurrency = 8
	// maxPages bounds pagination of any API.
	maxPages = 100
	// DefaultCapacityDurationHours is the Capacity Block length asked for
	// (DescribeCapacityBlockOfferings CapacityDurationHours): one day.
	DefaultCapacityDurationHours = 24
	// CapacityBlockWindow is how far ahead Capacity Blocks are searched:
	// StartDateRange = now, EndDateRange = now + 14 days (the latest END of
	// a block, per the API).
	CapacityBlockWindow = 14 * 24 * time.Hour
	// CapacityBlockInstanceCount is the InstanceCount asked for: a block is
	// bought whole, so a one-instance block is one unit.
	CapacityBlockInstanceCount = 1
)

// DefaultRegions are the two US regions that sell p4d and p4de.
var DefaultRegions = []string{"us-east-1", "us-west-2"}

// DefaultInstanceTypes are the A100 instance types.
var DefaultInstanceTypes = []string{"p4d.24xlarge", "p4de.24xlarge"}

// shape is what one instance of a type carries.
type shape struct {
	Model string
	GPUs  int
}

// shapes are the A100 instance types this source knows (providers.md §1.5).
var shapes = map[string]shape{
	"p4d.24xlarge":  {"A100-40GB", 8},
	"p4de.24xlarge": {"A100-80GB", 8},
}

// Shape returns the canonical GPU model and GPU count of an A100 instance type,
// or ok false for a type this source does not price.
func Shape(instanceType string) (gpuModel string, gpus int, ok bool) {
	s, ok := shapes[instanceType]
	return s.Model, s.GPUs, ok
}

// SpotPriceAPI is the one EC2 operation this source uses; *ec2.Client has it.
// It is also the SDK's ec2.DescribeSpotPriceHistoryAPIClient, so the SDK
// paginator drives it.
type SpotPriceAPI interface {
	DescribeSpotPriceHistory(ctx context.Context, in *sdkec2.DescribeSpotPriceHistoryInput, optFns ...func(*sdkec2.Options)) (*sdkec2.DescribeSpotPriceHistoryOutput, error)
}

// PriceListAPI is the one Price List operation this source uses; *pricing.Client has it.
type PriceListAPI interface {
	GetProducts(ctx context.Context, in *sdkpricing.GetProductsInput, optFns ...func(*sdkpricing.Options)) (*sdkpricing.GetProductsOutput, error)
}

// CapacityBlockAPI is the EC2 operation for Capacity Block offerings; *ec2.Client has it.
// It is also the SDK's ec2.DescribeCapacityBlockOfferingsAPIClient.
type CapacityBlockAPI interface {
	DescribeCapacityBlockOfferings(ctx context.Context, in *sdkec2.DescribeCapacityBlockOfferingsInput, optFns ...func(*sdkec2.Options)) (*sdkec2.DescribeCapacityBlockOfferingsOutput, error)
}

var (
	_ SpotPriceAPI     = (*sdkec2.Client)(nil)
	_ CapacityBlockAPI = (*sdkec2.Client)(nil)
	_ PriceListAPI     = (*sdkpricing.Client)(nil)
)

// Config configures the AWS quote source. Zero fields take the defaults.
type Config struct {
	// Regions are EC2 region codes (default us-east-1, us-west-2). China
	// regions (cn-*) are refused: they price in CNY from another partition.
	Regions []string
	// InstanceTypes to price (default p4d.24xlarge, p4de.24xlarge). A type that
	// is not an A100 type known to Shape is dropped, never called.
	InstanceTypes []string
	// EC2Endpoint and PricingEndpoint override the SDK's endpoints (BaseEndpoint),
	// for a test or replay server; "" is the SDK default. One EC2Endpoint serves
	// every region: the region still travels in the SigV4 credential scope.
	EC2Endpoint     string
	PricingEndpoint string
	// AccessKeyID and SecretAccessKey are static credentials; when both are
	// empty the SDK's default credential chain is used (config.LoadDefaultConfig).
	AccessKeyID     string
	SecretAccessKey string
	// MaxUnits is how many instances each offer assumes can be bought (neither
	// API reports stock); default 2.
	MaxUnits int
	// TTL is how long an offer stays valid after it was fetched (default 5m).
	TTL time.Duration
	// RetryMaxAttempts is the SDK's attempts per call (default 1: no retry,
	// see DefaultRetryMaxAttempts).
	RetryMaxAttempts int
	// CapacityDurationHours is the Capacity Block length searched for
	// (default 24; AWS accepts 1-day steps up to 14 days, then 7-day steps
	// up to 182 days).
	CapacityDurationHours int
	HTTPClient            *http.Client
	// Now is the clock (default time.Now); it stamps offers and is the
	// DescribeSpotPriceHistory StartTime.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if len(c.Regions) == 0 {
		c.Regions = DefaultRegions
	}
	if len(c.InstanceTypes) == 0 {
		c.InstanceTypes = DefaultInstanceTypes
	}
	if c.MaxUnits <= 0 {
		c.MaxUnits = DefaultMaxUnits
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.RetryMaxAttempts <= 0 {
		c.RetryMaxAttempts = DefaultRetryMaxAttempts
	}
	if c.CapacityDurationHours <= 0 {
		c.CapacityDurationHours = DefaultCapacityDurationHours
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Client is a sluice.QuoteSource for AWS EC2.
type Client struct {
	cfg  Config
	spot map[string]SpotPriceAPI
	list PriceListAPI
}

var _ sluice.QuoteSource = (*Client)(nil)

// New builds one EC2 client per region (Region set on the client) and one
// Price List client in us-east-1, each with BaseEndpoint from cfg when set.
// Credentials are static when cfg.AccessKeyID is set, else the SDK default
// chain (environment, shared config, IMDS …), resolved at the first call.
func New(ctx context.Context, cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, errors.New("aws: AccessKeyID and SecretAccessKey must be set together")
	}
	var awsCfg aws.Config
	if cfg.AccessKeyID != "" {
		awsCfg = aws.Config{
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		}
	} else {
		var opts []func(*config.LoadOptions) error
		if cfg.HTTPClient != nil {
			opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
		}
		var err error
		if awsCfg, err = config.LoadDefaultConfig(ctx, opts...); err != nil {
			return nil, fmt.Errorf("aws: loading SDK config: %w", err)
		}
	}
	if cfg.HTTPClient != nil {
		awsCfg.HTTPClient = cfg.HTTPClient
	}
	if awsCfg.HTTPClient == nil {
		awsCfg.HTTPClient = awshttp.NewBuildableClient()
	}
	awsCfg.HTTPClient = cappedClient{awsCfg.HTTPClient}
	awsCfg.RetryMaxAttempts = cfg.RetryMaxAttempts

	spot := map[string]SpotPriceAPI{}
	for _, region := range cfg.Regions {
		spot[region] = sdkec2.NewFromConfig(awsCfg, func(o *sdkec2.Options) {
			o.Region = region
			if cfg.EC2Endpoint != "" {
				o.BaseEndpoint = aws.String(cfg.EC2Endpoint)
			}
		})
	}
	list := sdkpricing.NewFromConfig(awsCfg, func(o *sdkpricing.Options) {
		o.Region = PricingRegion
		if cfg.PricingEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.PricingEndpoint)
		}
	})
	return NewWithAPIs(cfg, spot, list), nil
}

// NewWithAPIs returns a Client that calls spot[region] for each configured
// region and list for the on-demand prices (tests, fakes). A region without
// an entry in spot is reported as a failed call; a nil list means no
// on-demand offers are asked for. When spot[region] also implements
// CapacityBlockAPI (as *ec2.Client does) Capacity Blocks are asked for too;
// otherwise that region has no reserved offers.
func NewWithAPIs(cfg Config, spot map[string]SpotPriceAPI, list PriceListAPI) *Client {
	return &Client{cfg: cfg.withDefaults(), spot: spot, list: list}
}

// Name is "aws".
func (c *Client) Name() string { return Provider }

// CallError is one failed API call: the operation, its region (and instance
// type for GetProducts and DescribeCapacityBlockOfferings) and, when AWS
// answered with an error, its code (smithy.APIError.ErrorCode, e.g.
// RequestLimitExceeded, UnauthorizedOperation) and HTTP status.
type CallError struct {
	Op           string // "DescribeSpotPriceHistory", "GetProducts" or "DescribeCapacityBlockOfferings"
	Region       string
	InstanceType string // GetProducts and DescribeCapacityBlockOfferings only
	Code         string // "" when there was no API error answer (network, deadline, …)
	Message      string
	Status       int // HTTP status of the answer, 0 when there was none
	Err          error
}

func (e *CallError) Error() string {
	where := e.Region
	if e.InstanceType != "" {
		where += " " + e.InstanceType
	}
	if e.Code != "" {
		return fmt.Sprintf("aws %s %s: %s: %s", e.Op, where, e.Code, e.Message)
	}
	return fmt.Sprintf("aws %s %s: %v", e.Op, where, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Error codes by class. EC2's Query API throttles with RequestLimitExceeded
// (HTTP 503), AWS JSON APIs (Price List) with Throttling/ThrottlingException.
var (
	throttledCodes = map[string]bool{"RequestLimitExceeded": true, "Throttling": true, "ThrottlingException": true}
	authCodes      = map[string]bool{"AuthFailure": true, "UnauthorizedOperation": true, "InvalidClientTokenId": true,
		"SignatureDoesNotMatch": true, "AccessDeniedException": true}
	unavailableCodes = map[string]bool{"InternalError": true, "InternalFailure": true, "Unavailable": true,
		"ServiceUnavailable": true, "InternalErrorException": true}
)

// ErrorClass is the class recorded for the failed call, decided by the AWS
// error code first (an EC2 throttle is an HTTP 503): RequestLimitExceeded,
// Throttling, ThrottlingException → throttled; AuthFailure,
// UnauthorizedOperation, InvalidClientTokenId, SignatureDoesNotMatch,
// AccessDeniedException → auth; InternalError, InternalFailure, Unavailable,
// ServiceUnavailable or any HTTP 5xx → unavailable; any other code →
// bad-response. Without an answer (no code, no status) the class of Err
// (pricing.Classify: timeout for a deadline, unavailable for a network error).
func (e *CallError) ErrorClass() string {
	switch {
	case throttledCodes[e.Code]:
		return pricing.ClassThrottled
	case authCodes[e.Code]:
		return pricing.ClassAuth
	case unavailableCodes[e.Code] || e.Status >= 500:
		return pricing.ClassUnavailable
	case e.Code != "" || e.Status != 0:
		return pricing.ClassBadResponse
	case e.Err == nil:
		return pricing.ClassBadResponse
	}
	return pricing.Classify(e.Err)
}

// httpStatus is implemented by the SDK's response errors (smithy-go
// transport/http.ResponseError, aws/transport/http.ResponseError).
type httpStatus interface{ HTTPStatusCode() int }

func callError(op, region, instanceType string, err error) *CallError {
	ce := &CallError{Op: op, Region: region, InstanceType: instanceType, Err: err}
	var api smithy.APIError
	if errors.As(err, &api) {
		ce.Code, ce.Message = api.ErrorCode(), api.ErrorMessage()
	}
	var hs httpStatus
	if errors.As(err, &hs) {
		ce.Status = hs.HTTPStatusCode()
	}
	return ce
}

// result is what one call (all its pages) gave.
type result struct {
	offers  []sluice.Offer
	dropped []sluice.DroppedOffer
	err     error
}

// regionJobs holds one region's calls: spot (all types at once), one
// GetProducts and one DescribeCapacityBlockOfferings per instance type.
type regionJobs struct {
	region   string
	spot     result
	onDemand []result // by instance type
	reserved []result // by instance type; nil when the region's API has no Capacity Blocks
}

// Offers asks, concurrently (at most Concurrency calls in flight), for each
// configured region: DescribeSpotPriceHistory for all instance types (every
// page), and per instance type GetProducts and DescribeCapacityBlockOfferings
// (every page; see fetchCapacityBlocks). A failed call is recorded as a
// DroppedOffer whose Ref names the region (and type) and whose Reason carries
// the AWS error code (*CallError); err is returned only when every call failed.
//
// Offers come in region order, and within a region by instance type:
// on-demand first, then spot by availability zone, then reserved (Capacity
// Blocks) by zone, start date and offering id.
func (c *Client) Offers(ctx context.Context) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	now := c.cfg.Now()
	var dropped []sluice.DroppedOffer
	var types []string
	for _, it := range c.cfg.InstanceTypes {
		if _, _, ok := Shape(it); !ok {
			dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: Provider + ":" + it,
				Reason: fmt.Sprintf("instance type %q: not an A100 type this source prices", it)})
			continue
		}
		types = append(types, it)
	}
	var jobs []*regionJobs
	for _, r := range c.cfg.Regions {
		if strings.HasPrefix(r, "cn-") {
			dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: Provider + ":" + r,
				Reason: fmt.Sprintf("region %q: China partition (CNY, separate accounts) not supported", r)})
			continue
		}
		j := &regionJobs{region: r, onDemand: make([]result, len(types))}
		if _, ok := c.spot[r].(CapacityBlockAPI); ok {
			j.reserved = make([]result, len(types))
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 || len(types) == 0 {
		return nil, dropped, errors.New("aws: no region × A100 instance type to price")
	}

	sem := make(chan struct{}, Concurrency)
	var wg sync.WaitGroup
	calls := 0
	run := func(dst *result, fetch func() ([]sluice.Offer, []sluice.DroppedOffer, error)) {
		calls++
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				dst.err = ctx.Err()
				return
			}
			defer func() { <-sem }()
			dst.offers, dst.dropped, dst.err = fetch()
		}()
	}
	for _, j := range jobs {
		run(&j.spot, func() ([]sluice.Offer, []sluice.DroppedOffer, error) {
			return c.fetchSpot(ctx, j.region, types, now)
		})
		if j.reserved != nil {
			for i, it := range types {
				run(&j.reserved[i], func() ([]sluice.Offer, []sluice.DroppedOffer, error) {
					return c.fetchCapacityBlocks(ctx, j.region, it, now)
				})
			}
		}
		if c.list == nil {
			continue
		}
		for i, it := range types {
			run(&j.onDemand[i], func() ([]sluice.Offer, []sluice.DroppedOffer, error) {
				return c.fetchOnDemand(ctx, j.region, it, now)
			})
		}
	}
	wg.Wait()

	var offers []sluice.Offer
	var errs []error
	collect := func(r result, ref string) {
		dropped = append(dropped, r.dropped...)
		if r.err != nil {
			errs = append(errs, r.err)
			dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: ref, Reason: r.err.Error()})
		}
	}
	for _, j := range jobs {
		for i, it := range types {
			collect(j.onDemand[i], OnDemandID(j.region, it))
			offers = append(offers, j.onDemand[i].offers...)
			for _, o := range j.spot.offers {
				if o.SKU == it {
					offers = append(offers, o)
				}
			}
		}
		collect(j.spot, Provider+":"+j.region+":spot")
		if j.reserved != nil {
			for i, it := range types {
				collect(j.reserved[i], ReservedRef(j.region, it))
				offers = append(offers, j.reserved[i].offers...)
			}
		}
	}
	if len(errs) == calls {
		return nil, dropped, fmt.Errorf("aws: every call failed: %w", errors.Join(errs...))
	}
	return offers, dropped, nil
}

// fetchSpot pages through DescribeSpotPriceHistory for one region (all types,
// Linux/UNIX, StartTime now: the price in force per AZ) and converts the items.
func (c *Client) fetchSpot(ctx context.Context, region string, types []string, now time.Time) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	const op = "DescribeSpotPriceHistory"
	api := c.spot[region]
	if api == nil {
		return nil, nil, callError(op, region, "", errors.New("no EC2 client for the region"))
	}
	in := &sdkec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{ProductDescription},
		StartTime:           aws.Time(now),
	}
	for _, it := range types {
		in.InstanceTypes = append(in.InstanceTypes, ec2types.InstanceType(it))
	}
	p := sdkec2.NewDescribeSpotPriceHistoryPaginator(api, in, func(o *sdkec2.DescribeSpotPriceHistoryPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	var items []ec2types.SpotPrice
	for pages := 0; p.HasMorePages(); pages++ {
		if pages == maxPages {
			return nil, nil, callError(op, region, "", fmt.Errorf("more than %d pages", maxPages))
		}
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, callError(op, region, "", err)
		}
		items = append(items, out.SpotPriceHistory...)
	}
	offers, dropped := SpotOffers(region, items, now, c.cfg)
	if len(items) == 0 {
		// Not an error (a region may have no spot history for these types),
		// but never silent: the decision's sources say the region gave none.
		dropped = append(dropped, sluice.DroppedOffer{Provider: Provider, Ref: Provider + ":" + region + ":spot",
			Reason: fmt.Sprintf("%s %s: no spotPriceHistorySet items for %s", op, region, strings.Join(types, ", "))})
	}
	return offers, dropped, nil
}

// fetchCapacityBlocks pages through DescribeCapacityBlockOfferings for one
// region × instance type: CapacityDurationHours cfg.CapacityDurationHours,
// InstanceCount 1, StartDateRange now, EndDateRange now + CapacityBlockWindow
// (14 days), and converts the offerings (CapacityBlockOffers).
func (c *Client) fetchCapacityBlocks(ctx context.Context, region, instanceType string, now time.Time) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	const op = "DescribeCapacityBlockOfferings"
	api, ok := c.spot[region].(CapacityBlockAPI)
	if !ok {
		return nil, nil, callError(op, region, instanceType, errors.New("no EC2 Capacity Block client for the region"))
	}
	in := &sdkec2.DescribeCapacityBlockOfferingsInput{
		CapacityDurationHours: aws.Int32(int32(min(c.cfg.CapacityDurationHours, MaxCapacityBlockHours))),
		InstanceType:          aws.String(instanceType),
		InstanceCount:         aws.Int32(CapacityBlockInstanceCount),
		StartDateRange:        aws.Time(now),
		EndDateRange:          aws.Time(now.Add(CapacityBlockWindow)),
	}
	p := sdkec2.NewDescribeCapacityBlockOfferingsPaginator(api, in, func(o *sdkec2.DescribeCapacityBlockOfferingsPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	var items []ec2types.CapacityBlockOffering
	for pages := 0; p.HasMorePages(); pages++ {
		if pages == maxPages {
			return nil, nil, callError(op, region, instanceType, fmt.Errorf("more than %d pages", maxPages))
		}
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, callError(op, region, instanceType, err)
		}
		items = append(items, out.CapacityBlockOfferings...)
	}
	offers, dropped := CapacityBlockOffers(region, instanceType, items, now, c.cfg)
	return offers, dropped, nil
}

// fetchOnDemand pages through GetProducts for one region × instance type
// (Linux, shared tenancy, capacitystatus Used, no pre-installed software) and
// turns the matching Price List item into the on-demand offer.
func (c *Client) fetchOnDemand(ctx context.Context, region, instanceType string, now time.Time) ([]sluice.Offer, []sluice.DroppedOffer, error) {
	const op = "GetProducts"
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	in := &sdkpricing.GetProductsInput{
		ServiceCode:   aws.String(ServiceCode),
		FormatVersion: aws.String("aws_v1"),
		MaxResults:    aws.Int32(100),
		Filters: []pricingtypes.Filter{
			term("instanceType", instanceType),
			term("regionCode", region),
			term("operatingSystem", "Linux"),
			term("tenancy", "Shared"),
			term("capacitystatus", "Used"),
			term("preInstalledSw", "NA"),
		},
	}
	p := sdkpricing.NewGetProductsPaginator(c.list, in, func(o *sdkpricing.GetProductsPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	var docs []string
	for pages := 0; p.HasMorePages(); pages++ {
		if pages == maxPages {
			return nil, nil, callError(op, region, instanceType, fmt.Errorf("more than %d pages", maxPages))
		}
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, callError(op, region, instanceType, err)
		}
		docs = append(docs, out.PriceList...)
	}
	offers, dropped := OnDemandOffers(region, instanceType, docs, now, c.cfg)
	return offers, dropped, nil
}

// cappedClient caps every AWS response body at pricing.MaxBody (8 MiB), as
// pricing.ReadBody does for the other providers: the SDK reads bodies itself,
// so the cap sits under it.
type cappedClient struct{ next aws.HTTPClient }

// Do sends r and wraps the response body in a cappedBody.
func (c cappedClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(r)
	if err == nil && resp != nil && resp.Body != nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: pricing.MaxBody}
	}
	return resp, err
}

// cappedBody fails a read past its limit (the SDK then reports a
// deserialization error for the call, classed bad-response).
type cappedBody struct {
	io.ReadCloser
	left int64
}

// ErrBodyTooLarge is returned by a read past pricing.MaxBody.
var ErrBodyTooLarge = fmt.Errorf("aws response body larger than %d bytes", pricing.MaxBody)

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
