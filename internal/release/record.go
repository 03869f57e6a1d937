package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// maxRecordData is the most a Secret's (or a ConfigMap's) data may hold: the API server refuses
// a larger object.
const maxRecordData = 1 << 20

// encodeRecord encodes rel as Helm's drivers keep a record: its JSON, gzipped, in base64. Helm
// gzips at best compression, which costs three times the default level's time for about 1%
// less; records are written at the default level, and at best compression only when that is
// what keeps a record within limit bytes. Helm reads either.
func encodeRecord(rel *Release, limit int) (string, error) {
	b, err := json.Marshal(rel)
	if err != nil {
		return "", err
	}
	s, err := gzipBase64(b, gzip.DefaultCompression)
	if err != nil || len(s) <= limit {
		return s, err
	}
	return gzipBase64(b, gzip.BestCompression)
}

func gzipBase64(b []byte, level int) (string, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(b); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// recordLabels are the labels of the object that holds rel, as Helm's drivers write them: the
// release's own labels, the time of the write (createdAt on create, modifiedAt on update), and
// Helm's name, owner, status and version, which no label of the release overrides.
func recordLabels(rel *Release, update bool) map[string]string {
	l := maps.Clone(rel.Labels)
	if l == nil {
		l = map[string]string{}
	}
	stamp := "createdAt"
	if update {
		stamp = "modifiedAt"
	}
	l[stamp] = strconv.FormatInt(time.Now().Unix(), 10)
	return withHelmLabels(l, rel.Name, rel.Version, rel.Info.Status)
}

// withHelmLabels sets on l the labels Helm's drivers keep for themselves on the object of revision
// version of release name, and returns l.
func withHelmLabels(l map[string]string, name string, version int, status Status) map[string]string {
	l["name"] = name
	l["owner"] = "helm"
	l["status"] = string(status)
	l["version"] = strconv.Itoa(version)
	return l
}

// recordWriter creates or replaces the object that holds one record.
type recordWriter func(ctx context.Context, rel *Release, update bool) error

func secretWriter(c typedcorev1.SecretInterface) recordWriter {
	return func(ctx context.Context, rel *Release, update bool) error {
		data, err := encodeRecord(rel, maxRecordData)
		if err != nil {
			return err
		}
		obj := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: Key(rel.Name, rel.Version), Labels: recordLabels(rel, update)},
			Type:       "helm.sh/release.v1",
			Data:       map[string][]byte{"release": []byte(data)},
		}
		if update {
			_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
		} else {
			_, err = c.Create(ctx, obj, metav1.CreateOptions{})
		}
		return created(err)
	}
}

func configMapWriter(c typedcorev1.ConfigMapInterface) recordWriter {
	return func(ctx context.Context, rel *Release, update bool) error {
		data, err := encodeRecord(rel, maxRecordData)
		if err != nil {
			return err
		}
		obj := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: Key(rel.Name, rel.Version), Labels: recordLabels(rel, update)},
			Data:       map[string]string{"release": data},
		}
		if update {
			_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
		} else {
			_, err = c.Create(ctx, obj, metav1.CreateOptions{})
		}
		return created(err)
	}
}

// created is err of a write, with an object that exists already as Helm's drivers say it.
func created(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return driver.ErrReleaseExists
	}
	return err
}
