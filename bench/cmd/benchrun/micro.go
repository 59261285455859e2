package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/medallion-lake/medallion/bench"
	"github.com/medallion-lake/medallion/objstore/s3"
)

var benchFunc = regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)

// listMicro finds the repository's go test benchmarks (bench/ itself excluded).
func listMicro(repo string) ([]bench.MicroBench, error) {
	var out []bench.MicroBench
	err := filepath.WalkDir(repo, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, p)
		if e.IsDir() {
			if rel == "bench" || strings.HasPrefix(e.Name(), ".") && rel != "." || e.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // another module (tests/): `go test` from the root cannot run it
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pkg := "./" + filepath.ToSlash(filepath.Dir(rel))
		for _, m := range benchFunc.FindAllSubmatch(src, -1) {
			name := string(m[1])
			out = append(out, bench.MicroBench{Package: pkg, Name: name,
				Command: fmt.Sprintf("go test -run '^$' -bench '^%s$' -benchmem %s", name, pkg)})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Name < out[j].Name
	})
	return out, err
}

// micro runs every package's benchmarks once with -benchmem and returns the listing and the
// benchmark lines of the output.
func micro(ctx context.Context, o options) ([]bench.MicroBench, string) {
	list, err := listMicro(o.repo)
	if err != nil {
		return list, "listing benchmarks: " + err.Error()
	}
	var pkgs []string
	seen := map[string]bool{}
	for _, m := range list {
		if !seen[m.Package] {
			seen[m.Package] = true
			pkgs = append(pkgs, m.Package)
		}
	}
	var b strings.Builder
	if o.microSkip != "" {
		fmt.Fprintf(&b, "(not run: benchmarks matching %q)\n", o.microSkip)
	}
	for _, pkg := range pkgs {
		logf("microbenchmarks %s", pkg)
		args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", o.microTime}
		if o.microSkip != "" {
			args = append(args, "-skip", o.microSkip)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
		cmd.Dir = o.repo
		out, err := cmd.CombinedOutput()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "Benchmark") || strings.HasPrefix(line, "pkg:") || strings.HasPrefix(line, "--- SKIP") || strings.Contains(line, "skipped") {
				b.WriteString(line + "\n")
			}
		}
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", pkg, err)
		}
	}
	return list, b.String()
}

// makeBucket creates the benchmark bucket on MinIO if it is not there yet.
func makeBucket(ctx context.Context, endpoint, name string) error {
	c, err := s3.NewClient(ctx, s3.Config{Bucket: name, Endpoint: endpoint, PathStyle: true,
		AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")})
	if err != nil {
		return fmt.Errorf("minio client: %w", err)
	}
	_, err = c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}
