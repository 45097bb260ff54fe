package kubeenv

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"time"
)

// The local node's images. No registry is reachable, so both are built here from the probe program
// (test/kubeenv/probe) and imported into containerd before the kubelet starts; nothing is ever pulled.
const (
	// PauseImage is the pod sandbox image, under the name containerd's CRI asks for by default.
	PauseImage = "registry.k8s.io/pause:3.10.2"
	// ProbeImage runs the probe: `probe serve` by default (HTTP on :8080), `probe get URL`, `probe echo`.
	// Its tag is not "latest", so pods that name it default to imagePullPolicy IfNotPresent and find it.
	ProbeImage = "federate.local/probe:v1"
)

// The OCI image-spec media types and the few fields of its documents that an image of one layer needs.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociImageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string   `json:"User,omitempty"`
		Entrypoint []string `json:"Entrypoint,omitempty"`
		Cmd        []string `json:"Cmd,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// imageSpec is one single-layer image: the program at path in the image, how it starts, and as whom.
type imageSpec struct {
	ref        string
	path       string
	entrypoint []string
	cmd        []string
	user       string
}

// writeOCIArchive writes an OCI image layout as a tar file (what `ctr images import` reads) holding one
// image: a single uncompressed layer with the program, run as spec.user (numeric, so Pod Security's
// runAsNonRoot can check it).
func writeOCIArchive(out, arch string, program []byte, spec imageSpec) error {
	var layer bytes.Buffer
	lt := tar.NewWriter(&layer)
	epoch := time.Unix(0, 0)
	for dir := path.Dir(spec.path); dir != "."; dir = path.Dir(dir) { // its directories, outermost last
		if err := lt.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	if err := lt.WriteHeader(&tar.Header{Name: spec.path, Mode: 0o755, Size: int64(len(program)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := lt.Write(program); err != nil {
		return err
	}
	if err := lt.Close(); err != nil {
		return err
	}
	layerDigest := digest(layer.Bytes())

	var cfg ociImageConfig
	cfg.Architecture, cfg.OS = arch, "linux"
	cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Cmd = spec.user, spec.entrypoint, spec.cmd
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{layerDigest}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Config        ociDescriptor   `json:"config"`
		Layers        []ociDescriptor `json:"layers"`
	}{2, mediaManifest,
		ociDescriptor{MediaType: mediaConfig, Digest: digest(cfgJSON), Size: int64(len(cfgJSON))},
		[]ociDescriptor{{MediaType: mediaLayer, Digest: layerDigest, Size: int64(layer.Len())}}})
	if err != nil {
		return err
	}
	index, err := json.Marshal(struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Manifests     []ociDescriptor `json:"manifests"`
	}{2, mediaIndex, []ociDescriptor{{
		MediaType: mediaManifest, Digest: digest(manifest), Size: int64(len(manifest)),
		// containerd names the imported image after io.containerd.image.name.
		Annotations: map[string]string{"io.containerd.image.name": spec.ref, "org.opencontainers.image.ref.name": spec.ref},
	}}})
	if err != nil {
		return err
	}

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(digest(manifest)), manifest},
		{blobPath(digest(cfgJSON)), cfgJSON},
		{blobPath(layerDigest), layer.Bytes()},
	}
	for _, file := range files {
		if err := tw.WriteHeader(&tar.Header{Name: file.name, Mode: 0o644, Size: int64(len(file.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			f.Close()
			return err
		}
		if _, err := tw.Write(file.data); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blobPath(d string) string { return fmt.Sprintf("blobs/sha256/%s", d[len("sha256:"):]) }
