package app

import (
	"context"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/sluicehq/sluice/ledger"
)

// openLedger opens the ledger Options name: the DynamoDB table
// o.LedgerTable (AWS SDK default configuration: region, credentials,
// AWS_ENDPOINT_URL_DYNAMODB) when set, else the SQLite file o.LedgerPath.
func openLedger(ctx context.Context, o Options) (ledger.Store, error) {
	if o.LedgerTable == "" {
		s, err := ledger.OpenSQLite(ctx, o.LedgerPath)
		if err != nil { // no typed nil in the interface: App.Close checks for nil
			return nil, err
		}
		return s, nil
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamodb ledger %s: aws config: %w", o.LedgerTable, err)
	}
	d, err := ledger.OpenDynamoDB(ctx, cfg, o.LedgerTable)
	if err != nil {
		return nil, err
	}
	return d, nil
}
