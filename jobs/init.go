package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// InitReport is what `medallion init` did.
type InitReport struct {
	// Bucket is "created", "exists" or "" for a file lake.
	Bucket string `json:"bucket,omitempty"`
	// PutIfAbsent is "ok", or "unsafe_commits" when the config opted out of the check.
	PutIfAbsent string `json:"putIfAbsent"`
	// Created lists the tables this run created; Existing those that were there already.
	Created  []string `json:"created"`
	Existing []string `json:"existing"`
}

// Init prepares a lake for the pipeline: it creates the S3 bucket when it is missing and the
// store allows it (MinIO, LocalStack; on AWS the bucket usually exists already), checks that the
// store refuses to overwrite with put-if-absent (the commit protocol needs it), and creates every
// table of the pipeline that does not exist yet, empty, with its schema. Running it again changes
// nothing.
func Init(ctx context.Context, env Env) (InitReport, error) {
	rep := InitReport{Created: []string{}, Existing: []string{}}
	if b, ok := env.Lake.(*s3.Bucket); ok {
		state, err := ensureBucket(ctx, b.Client(), b.Name())
		if err != nil {
			return rep, err
		}
		rep.Bucket = state
	}
	rep.PutIfAbsent = "unsafe_commits"
	if !env.Config.UnsafeCommits {
		if err := objstore.ProbePutIfAbsent(ctx, env.Lake, "_medallion"); err != nil {
			return rep, fmt.Errorf("jobs: init: %w", err)
		}
		rep.PutIfAbsent = "ok"
	}
	existed := map[string]bool{}
	for _, p := range TablePaths(env) {
		if _, err := table.Open(objstore.WithPrefix(env.Lake, p), table.Options{}).Log().Snapshot(ctx); err == nil {
			existed[p] = true
		} else if !errors.Is(err, txlog.ErrTableNotFound) {
			return rep, fmt.Errorf("jobs: init: %s: %w", p, err)
		}
	}
	for _, src := range env.Config.AllSources() {
		se, _ := env.ForSource(src.Name)
		if err := initSource(ctx, se, existed); err != nil {
			return rep, err
		}
	}
	for _, j := range specs.Joins(env.Config) {
		if err := initJoin(ctx, env, j, existed); err != nil {
			return rep, err
		}
	}
	if err := late.CreateDerived(ctx, late.Options{Lake: env.Lake, Clock: env.clock, Logger: env.Logger}, specs.Derived(env.Config)); err != nil {
		return rep, fmt.Errorf("jobs: init: %w", err)
	}
	for _, p := range TablePaths(env) {
		if existed[p] {
			rep.Existing = append(rep.Existing, p)
		} else {
			rep.Created = append(rep.Created, p)
		}
	}
	return rep, nil
}

// initSource creates one source's bronze and rejects tables, then its silver, quarantine and
// gold tables as its stream derives them from bronze's schema. env is the source's view.
func initSource(ctx context.Context, env Env, existed map[string]bool) error {
	declared, err := DeclaredSchema(env.Config)
	if err != nil {
		return err
	}
	cfg := env.Config
	bronzeSchema := bronze.BronzeSchema(declared)
	if cfg.Landing.Kind == config.LandingKafka {
		bronzeSchema = bronze.KafkaBronzeSchema(declared)
	}
	// An existing bronze table gets the columns added to `schema:` (or refuses a change it
	// cannot take), as ingest would, so that silver below follows it.
	btbl := table.Open(objstore.WithPrefix(env.Lake, cfg.Tables.Bronze), table.Options{Clock: env.clock})
	props := specs.SourceTables(cfg).TableProps(nil)
	if err := bronze.EnsureBronzeTable(ctx, btbl, cfg.Tables.Bronze, bronzeSchema, declared, SchemaPolicy(cfg), props); err != nil {
		return fmt.Errorf("jobs: init: %w", err)
	}
	if err := createTableWith(ctx, env, cfg.Tables.Rejects, bronze.RejectsSchema(), props, existed); err != nil {
		return err
	}
	// Silver, quarantine and gold follow from bronze's schema, as the stream derives them.
	if err := stream.CreateTables(ctx, stream.Options{Lake: env.Lake, Query: specs.Query(cfg), Clock: env.Clock, Logger: env.Logger}); err != nil {
		return fmt.Errorf("jobs: init: source %s: %w", cfg.Stream.Name, err)
	}
	return nil
}

// initJoin creates a join's joined table and quarantine from its sources' silver schemas
// (join.Output, join.QuarantineSchema), read from the silver tables initSource created. The
// aggregations over the join are created by the join query itself.
func initJoin(ctx context.Context, env Env, j spec.Join, existed map[string]bool) error {
	typ, err := join.ParseType(j.Type)
	if err != nil {
		return err
	}
	schemaOf := func(path string) (*txlog.StructType, error) {
		snap, err := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Log().Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("jobs: init: join %s: silver %s: %w", j.Name, path, err)
		}
		return snap.Schema()
	}
	left, err := schemaOf(j.Left.Silver)
	if err != nil {
		return err
	}
	right, err := schemaOf(j.Right.Silver)
	if err != nil {
		return err
	}
	out, err := join.Output(typ, left, right, j.Right.Source)
	if err != nil {
		return fmt.Errorf("jobs: init: join %s: %w", j.Name, err)
	}
	q, err := join.QuarantineSchema(left, right, j.Right.Source)
	if err != nil {
		return fmt.Errorf("jobs: init: join %s: %w", j.Name, err)
	}
	// The joined table with the change data feed as the join query would create it.
	if err := createTableWith(ctx, env, j.Table, out.Schema, spec.CreateProps(nil, j.NoChangeDataFeed), existed); err != nil {
		return err
	}
	return createTable(ctx, env, j.Quarantine, q, existed)
}

func createTable(ctx context.Context, env Env, path string, schema *txlog.StructType, existed map[string]bool) error {
	return createTableWith(ctx, env, path, schema, nil, existed)
}

func createTableWith(ctx context.Context, env Env, path string, schema *txlog.StructType, props map[string]string, existed map[string]bool) error {
	if existed[path] {
		return nil
	}
	tbl := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{Clock: env.clock})
	if _, err := tbl.Create(ctx, schema, nil, props); err != nil && !errors.Is(err, table.ErrTableExists) {
		return fmt.Errorf("jobs: init: create %s: %w", path, err)
	}
	return nil
}

// ensureBucket creates the bucket unless it exists; "created" or "exists".
func ensureBucket(ctx context.Context, c *awss3.Client, name string) (string, error) {
	_, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(name)})
	if err == nil {
		return "exists", nil
	}
	var api smithy.APIError
	if !errors.As(err, &api) || (api.ErrorCode() != "NotFound" && api.ErrorCode() != "NoSuchBucket") {
		return "", fmt.Errorf("jobs: init: bucket %s: %w", name, err)
	}
	in := &awss3.CreateBucketInput{Bucket: aws.String(name)}
	if r := c.Options().Region; r != "" && r != "us-east-1" {
		// S3 wants the region named outside us-east-1; MinIO and LocalStack accept it too.
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	if _, err := c.CreateBucket(ctx, in); err != nil {
		if errors.As(err, &api) && (api.ErrorCode() == "BucketAlreadyOwnedByYou" || api.ErrorCode() == "BucketAlreadyExists") {
			return "exists", nil
		}
		return "", fmt.Errorf("jobs: init: create bucket %s: %w", name, err)
	}
	return "created", nil
}
