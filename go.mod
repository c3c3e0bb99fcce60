module github.com/kevolve/kevolve-mcp

go 1.26

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/mark3labs/mcp-go v1.2.1
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/philippgille/chromem-go v0.7.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	golang.org/x/text v0.14.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
)
