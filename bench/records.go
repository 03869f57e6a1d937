package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/berthdev/berth/internal/release"
)

// "berth-bench records" measures what a large release record costs: writing and reading one
// record of each record chart with berth's store and with Helm's Secrets driver, in the harness's
// own process, and `berth list -A` against `helm list -A` over many releases of
// kube-prometheus-stack's size, each with a few revisions.

// recordsConfig is what "records" was asked to do.
type recordsConfig struct {
	berth, helm, devcluster, measurer string
	// rounds counts the writes and reads of each record, lists the runs of each tool's list, each
	// after a warm-up.
	rounds, lists                   int
	releases, revisions, namespaces int
	out, readme, work               string
	reportOnly                      bool
}

// recordCharts are the charts whose records are written and read.
var recordCharts = []string{"large-record", "huge-record"}

// listChart is the chart of every release of the list.
const listChart = "large-record"

func parseRecordsFlags(args []string) (recordsConfig, error) {
	fs := flag.NewFlagSet("records", flag.ContinueOnError)
	var cfg recordsConfig
	fs.StringVar(&cfg.berth, "berth", "bin/berth", "berth binary")
	fs.StringVar(&cfg.helm, "helm", "bin/helm", "Helm v4 binary")
	fs.StringVar(&cfg.devcluster, "devcluster", "bin/berth-devcluster", "devcluster binary")
	fs.StringVar(&cfg.measurer, "measurer", "bin/berth-bench-measure", "berth-bench-measure binary, which runs each list and reads its peak memory")
	fs.IntVar(&cfg.rounds, "rounds", 20, "counted writes and reads of each record with each tool, after a warm-up")
	fs.IntVar(&cfg.lists, "lists", 3, "counted runs of each tool's list -A, after a warm-up")
	fs.IntVar(&cfg.releases, "releases", 100, "releases of the "+listChart+" chart that the lists read (1000 needs about 20 GiB for helm list -A, see bench/README.md)")
	fs.IntVar(&cfg.revisions, "revisions", 2, "revisions of each release of the lists (the newest deployed, the others superseded)")
	fs.IntVar(&cfg.namespaces, "namespaces", 10, "namespaces the releases of the lists are spread over")
	fs.StringVar(&cfg.out, "out", "bench/results", "directory for records.json and records.md")
	fs.StringVar(&cfg.readme, "readme", "bench/README.md", "README whose records results section is replaced by the new tables (empty: none)")
	fs.StringVar(&cfg.work, "work", "", "work directory for the cluster and charts (default: a new temporary directory)")
	fs.BoolVar(&cfg.reportOnly, "report-only", false, reportOnlyUsage)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"rounds", cfg.rounds}, {"lists", cfg.lists}, {"releases", cfg.releases}, {"revisions", cfg.revisions}, {"namespaces", cfg.namespaces}} {
		if n.v < 1 {
			return cfg, fmt.Errorf("--%s must be at least 1, got %d", n.name, n.v)
		}
	}
	return cfg, nil
}

// recordSample is one write or read of a record.
type recordSample struct {
	Tool  string `json:"tool"`
	Op    string `json:"op"` // write or read
	Round int    `json:"round"`
	// Seconds is the call's time: encoding and the requests for a write, the requests and
	// decoding for a read.
	Seconds float64 `json:"seconds"`
	// BytesSent are the bodies of the requests, BytesReceived those of the answers.
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	Requests      int64  `json:"requests"`
	Error         string `json:"error,omitempty"`
}

// recordCase is what writing and reading one chart's record cost each tool.
type recordCase struct {
	Chart string `json:"chart"`
	// HelmSize is the record's size as Helm's driver encodes it (best compression, base64).
	HelmSize int `json:"helm_size"`
	// Stored is, by tool, the data bytes of the Secrets that hold one revision (record and
	// parts), and Objects how many Secrets.
	Stored  map[string]int `json:"stored_bytes"`
	Objects map[string]int `json:"objects"`
	Samples []recordSample `json:"samples"`
}

// listSample is one run of a tool's list -A.
type listSample struct {
	Tool         string  `json:"tool"`
	Round        int     `json:"round"`
	Seconds      float64 `json:"seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	APIRequests  int     `json:"api_requests"`
	Error        string  `json:"error,omitempty"`
}

// listCase is the lists of many releases.
type listCase struct {
	Releases   int `json:"releases"`
	Revisions  int `json:"revisions"`
	Namespaces int `json:"namespaces"`
	// RecordBytes is every record's data bytes, as berth's store wrote them.
	RecordBytes   int64        `json:"record_bytes"`
	CreateSeconds float64      `json:"create_seconds"`
	Samples       []listSample `json:"samples"`
}

type recordsResults struct {
	Machine  machine      `json:"machine"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Rounds   int          `json:"rounds"`
	Lists    int          `json:"lists"`
	Records  []recordCase `json:"records"`
	List     listCase     `json:"list"`
	Goals    []goal       `json:"goals"`
}

func runRecordsBench(args []string) error {
	cfg, err := parseRecordsFlags(args)
	if err != nil {
		return err
	}
	if err := absBinaries(&cfg.berth, &cfg.helm, &cfg.devcluster, &cfg.measurer); err != nil {
		return err
	}
	if cfg.work == "" {
		if cfg.work, err = os.MkdirTemp("", "berth-bench-records-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.work)
	}
	// Copies of the binaries, as "run" makes them (see there).
	for _, bin := range []*string{&cfg.berth, &cfg.helm} {
		if *bin, err = copyBinary(*bin, filepath.Join(cfg.work, "bin")); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	runCfg := config{berth: cfg.berth, helm: cfg.helm, devcluster: cfg.devcluster, measurer: cfg.measurer, work: cfg.work}
	res := recordsResults{Machine: describeMachine(runCfg), Started: time.Now(), Rounds: cfg.rounds, Lists: cfg.lists}
	dir := filepath.Join(cfg.work, "cluster")
	cs := clusterSettings{Cases: []string{"records"}, JobBatchPeriod: upstreamJobBatchPeriod.String(), ControllerQPS: 20}
	fmt.Printf("starting devcluster in %s\n", dir)
	cluster, err := startCluster(ctx, runCfg, cs, dir)
	if err != nil {
		return err
	}
	defer cluster.stop()
	h, err := newHarness(runCfg, cluster.kubeconfig, cluster.audit, os.Stdout)
	if err != nil {
		return err
	}
	for _, name := range recordCharts {
		rc, err := h.measureRecord(ctx, name, cfg.rounds)
		if err != nil {
			return fmt.Errorf("record of %s: %w", name, err)
		}
		res.Records = append(res.Records, rc)
	}
	if res.List, err = h.measureList(ctx, cfg); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	res.Finished = time.Now()
	res.Goals = res.goals()
	if err := res.write(cfg); err != nil {
		return err
	}
	return judge(missedGoals(res.Goals), cfg.reportOnly)
}

// byteCounter counts the requests a client sends and the bytes of their bodies and answers'.
type byteCounter struct {
	requests, sent, received atomic.Int64
}

func (c *byteCounter) reset() { c.requests.Store(0); c.sent.Store(0); c.received.Store(0) }

type countingTransport struct {
	rt http.RoundTripper
	c  *byteCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.requests.Add(1)
	if req.ContentLength > 0 {
		t.c.sent.Add(req.ContentLength)
	}
	resp, err := t.rt.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.c.received}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// countingClient is a client of the cluster whose requests c counts.
func (h *harness) countingClient(c *byteCounter) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", h.kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = harnessUserAgent
	rc.QPS, rc.Burst = 200, 400
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{rt: rt, c: c} }
	return kubernetes.NewForConfig(rc)
}

// recordTools write and read a record: berth's store and Helm's Secrets driver.
var recordTools = []string{"berth", "helm"}

// measureRecord writes and reads a revision of the chart's release rounds times (after a
// warm-up), with each tool in a namespace of its own, the tools' order alternating.
func (h *harness) measureRecord(ctx context.Context, name string, rounds int) (recordCase, error) {
	spec, _ := chartByName(name)
	path, err := spec.write(filepath.Join(h.cfg.work, "charts"))
	if err != nil {
		return recordCase{}, err
	}
	base, err := recordRelease(ctx, path, releaseName, "default", 1)
	if err != nil {
		return recordCase{}, err
	}
	rc := recordCase{Chart: name, Stored: map[string]int{}, Objects: map[string]int{}}
	if rc.HelmSize, err = helmRecordSize(base); err != nil {
		return rc, err
	}
	fmt.Printf("\n== records of %s: %s as Helm writes it\n", name, release.Bytes(rc.HelmSize))
	var counter byteCounter
	client, err := h.countingClient(&counter)
	if err != nil {
		return rc, err
	}
	namespaces := map[string]string{}
	for _, tool := range recordTools {
		namespaces[tool] = "records-" + name + "-" + tool
		if err := h.createNamespace(ctx, namespaces[tool]); err != nil {
			return rc, err
		}
	}
	berthStore := release.NewSecretStore(client.CoreV1(), namespaces["berth"])
	helmDriver := driver.NewSecrets(client.CoreV1().Secrets(namespaces["helm"]))
	helmFailed := ""
	for round := 0; round <= rounds; round++ {
		order := recordTools
		if round%2 == 1 {
			order = []string{recordTools[1], recordTools[0]}
		}
		for _, tool := range order {
			if tool == "helm" && helmFailed != "" {
				continue
			}
			rel := *base
			rel.Namespace, rel.Version = namespaces[tool], round+1
			var write, read func() error
			switch tool {
			case "berth":
				write = func() error { return berthStore.Create(ctx, &rel) }
				read = func() error { _, err := berthStore.Get(ctx, rel.Name, rel.Version); return err }
			default:
				write = func() error { return helmDriver.Create(release.Key(rel.Name, rel.Version), &rel) }
				read = func() error { _, err := helmDriver.Get(release.Key(rel.Name, rel.Version)); return err }
			}
			for _, op := range []struct {
				name string
				do   func() error
			}{{"write", write}, {"read", read}} {
				counter.reset()
				start := time.Now()
				err := op.do()
				s := recordSample{Tool: tool, Op: op.name, Round: round, Seconds: time.Since(start).Seconds(),
					BytesSent: counter.sent.Load(), BytesReceived: counter.received.Load(), Requests: counter.requests.Load()}
				if err != nil {
					s.Error = err.Error()
				}
				rc.Samples = append(rc.Samples, s)
				fmt.Printf("%-12s round %d %-5s %-5s %6.3fs  %d requests, %s sent, %s received\n", name, round, tool, op.name, s.Seconds,
					s.Requests, release.Bytes(int(s.BytesSent)), release.Bytes(int(s.BytesReceived)))
				if err != nil {
					fmt.Printf("  FAILED: %v\n", err)
					if tool == "helm" {
						helmFailed = s.Error
					}
					break
				}
			}
			if helmFailed != "" && tool == "helm" {
				continue
			}
			if round == 0 {
				n, size, err := h.storedRecord(ctx, namespaces[tool], rel.Name, rel.Version)
				if err != nil {
					return rc, err
				}
				rc.Objects[tool], rc.Stored[tool] = n, size
			}
		}
	}
	for _, ns := range namespaces {
		if err := h.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			return rc, err
		}
	}
	return rc, nil
}

// storedRecord counts the Secrets that hold revision version of release name in namespace (its
// record and its parts, labelled name and version alike) and the bytes of their data.
func (h *harness) storedRecord(ctx context.Context, namespace, name string, version int) (objects, size int, err error) {
	l, err := h.client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("name=%s,version=%d", name, version)})
	if err != nil {
		return 0, 0, err
	}
	for _, s := range l.Items {
		objects++
		for _, v := range s.Data {
			size += len(v)
		}
	}
	return objects, size, nil
}

// listTools are the tools whose list -A is measured.
var listTools = []string{"berth", "helm"}

// measureList records cfg.releases releases of the list chart, spread over cfg.namespaces
// namespaces, cfg.revisions revisions each, with berth's store, then runs each tool's list -A
// rounds times after a warm-up, the tools' order alternating.
func (h *harness) measureList(ctx context.Context, cfg recordsConfig) (listCase, error) {
	lc := listCase{Releases: cfg.releases, Revisions: cfg.revisions, Namespaces: cfg.namespaces}
	spec, _ := chartByName(listChart)
	path, err := spec.write(filepath.Join(h.cfg.work, "charts"))
	if err != nil {
		return lc, err
	}
	base, err := recordRelease(ctx, path, "kps", "default", 1)
	if err != nil {
		return lc, err
	}
	fmt.Printf("\n== list -A: %d releases of %s in %d namespaces, %d revisions each\n", cfg.releases, listChart, cfg.namespaces, cfg.revisions)
	for i := range cfg.namespaces {
		if err := h.createNamespace(ctx, listNamespace(i)); err != nil {
			return lc, err
		}
	}
	start := time.Now()
	if lc.RecordBytes, err = h.createReleases(ctx, base, cfg); err != nil {
		return lc, err
	}
	lc.CreateSeconds = time.Since(start).Seconds()
	fmt.Printf("created %d records (%s) in %.1fs\n", cfg.releases*cfg.revisions, release.Bytes(int(lc.RecordBytes)), lc.CreateSeconds)
	for round := 0; round <= cfg.lists; round++ {
		order := listTools
		if round%2 == 1 {
			order = []string{listTools[1], listTools[0]}
		}
		for _, tool := range order {
			bin := h.cfg.berth
			if tool == "helm" {
				bin = h.cfg.helm
			}
			p := runProcess(ctx, h.cfg.measurer, h.env, bin, "list", "-A")
			s := listSample{Tool: tool, Round: round, Seconds: p.Wall().Seconds(), PeakRSSBytes: p.PeakRSS}
			if p.Err != nil {
				s.Error = p.Err.Error()
			} else if want := min(cfg.releases, 256); strings.Count(p.Output, "kps-") != want {
				s.Error = fmt.Sprintf("listed %d releases, want %d:\n%s", strings.Count(p.Output, "kps-"), want, lastLines(p.Output, 5))
			}
			sleep(ctx, auditSettle)
			n, _, err := h.audit.requests(p.Start, p.End, userAgentOf(tool))
			if err != nil {
				return lc, fmt.Errorf("audit log: %w", err)
			}
			s.APIRequests = n
			lc.Samples = append(lc.Samples, s)
			fmt.Printf("list -A round %d %-5s %6.2fs  rss %4.0f MiB  %d requests\n", round, tool, s.Seconds, float64(s.PeakRSSBytes)/(1<<20), n)
			if s.Error != "" {
				fmt.Printf("  FAILED: %s\n", s.Error)
			}
		}
	}
	return lc, nil
}

func listNamespace(i int) string { return fmt.Sprintf("records-list-%02d", i) }

// createReleases records the releases of the list through berth's store, a few at a time, and
// returns the bytes of their records' data. Release i is kps-NNNN in namespace i mod namespaces.
func (h *harness) createReleases(ctx context.Context, base *release.Release, cfg recordsConfig) (int64, error) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var total atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ns := listNamespace(i % cfg.namespaces)
				store := release.NewSecretStore(h.client.CoreV1(), ns)
				for v := 1; v <= cfg.revisions; v++ {
					rel := *base
					info := *base.Info
					rel.Name, rel.Namespace, rel.Version, rel.Info = fmt.Sprintf("kps-%04d", i), ns, v, &info
					if v < cfg.revisions {
						info.Status = release.StatusSuperseded
					}
					err := createRetrying(ctx, store, &rel)
					if err != nil {
						mu.Lock()
						firstErr = errors.Join(firstErr, fmt.Errorf("release %s/%s revision %d: %w", ns, rel.Name, v, err))
						mu.Unlock()
						return
					}
				}
			}
		}()
	}
	for i := range cfg.releases {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	for i := range cfg.namespaces {
		l, err := h.client.CoreV1().Secrets(listNamespace(i)).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
		if err != nil {
			return 0, err
		}
		for _, s := range l.Items {
			for _, v := range s.Data {
				total.Add(int64(len(v)))
			}
		}
	}
	return total.Load(), nil
}

// createRetrying records rel, trying again a few times when the API server fails (a large write
// under load can time out); a revision already recorded by a try that timed out is done.
func createRetrying(ctx context.Context, store *release.HelmStore, rel *release.Release) error {
	var err error
	for try := range 5 {
		if err = store.Create(ctx, rel); err == nil || errors.Is(err, release.ErrExists) {
			return nil
		}
		sleep(ctx, time.Duration(100<<try)*time.Millisecond)
	}
	return err
}
