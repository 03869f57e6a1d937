package source

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// NoDockerCredentialsError is a Docker config (a kubernetes.io/dockerconfigjson Secret's
// .dockerconfigjson) with no credentials for the registry Host.
type NoDockerCredentialsError struct {
	Host string
}

func (e *NoDockerCredentialsError) Error() string {
	return fmt.Sprintf("the Docker config has no credentials for registry %s", e.Host)
}

// DockerConfigCredentials returns the username and password that the Docker config data (the
// content of ~/.docker/config.json, or of a kubernetes.io/dockerconfigjson Secret) holds for the
// registry host (HOST[:PORT]). Entries are matched by their host, whatever their scheme and
// path (https://HOST/v1/ as docker login writes for Docker Hub). Its errors never hold the
// content of data.
func DockerConfigCredentials(data []byte, host string) (username, password string, err error) {
	var conf struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		return "", "", errors.New("the Docker config is not JSON of the form {\"auths\": {HOST: {...}}}")
	}
	for key, a := range conf.Auths {
		if !sameRegistry(key, host) {
			continue
		}
		if a.Username != "" || a.Password != "" {
			return a.Username, a.Password, nil
		}
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return "", "", fmt.Errorf("the Docker config's auth of registry %s is not base64", host)
		}
		u, p, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", "", fmt.Errorf("the Docker config's auth of registry %s is not USERNAME:PASSWORD", host)
		}
		return u, p, nil
	}
	return "", "", &NoDockerCredentialsError{Host: host}
}

// sameRegistry reports whether the key of a Docker config's auths names the registry host.
func sameRegistry(key, host string) bool {
	h := key
	if strings.Contains(h, "://") {
		h = hostOf(h)
	} else {
		h, _, _ = strings.Cut(h, "/")
	}
	if h == host {
		return true
	}
	// Docker Hub: docker login writes https://index.docker.io/v1/ for registry-1.docker.io.
	hub := map[string]bool{"index.docker.io": true, "docker.io": true, "registry-1.docker.io": true}
	return hub[h] && hub[host]
}
