package sim

// Calibration is what a profile fitted to a live server (`autoinfer sim
// calibrate --observe`) records about the fit: the server it observed, the
// probe, each fitted coefficient with its standard error, and the error of
// its predictions on probe groups the fit did not see. A profile whose
// calibration says it is unfit is refused: its figures would not be
// evidence.
type Calibration struct {
	Server       CalibratedServer   `yaml:"server"`
	Seed         uint64             `yaml:"seed"`
	Budget       string             `yaml:"budget"`
	Groups       int                `yaml:"groups"`
	Steps        int                `yaml:"steps"`
	HeldOut      int                `yaml:"held_out_groups"`
	Coefficients []FittedValue      `yaml:"coefficients"`
	ResidualMs   float64            `yaml:"residual_ms"`
	HeldOutError map[string]float64 `yaml:"held_out_error"`
	// HTTPOverheadMs is the time a probe request spent outside the
	// engine's steps (the path to the server and back), which the
	// held-out error's predictions add, as a spec's http_overhead_ms does
	// on the virtual clock.
	HTTPOverheadMs float64 `yaml:"http_overhead_ms,omitempty"`
	// Overloaded is how many probe groups were left out because the host
	// ran them late.
	Overloaded int `yaml:"overloaded_groups,omitempty"`
	// Unfit, when set, is why the step model does not describe the server.
	Unfit string `yaml:"unfit,omitempty"`
}

// CalibratedServer is the identity of the observed server.
type CalibratedServer struct {
	URL      string `yaml:"url"`
	Model    string `yaml:"model"`
	Version  string `yaml:"version,omitempty"`
	Hardware string `yaml:"hardware,omitempty"`
	// NumGPUBlocks and BlockSize are the KV capacity the server's
	// vllm:cache_config_info metric declared (0: not exposed).
	NumGPUBlocks int `yaml:"num_gpu_blocks,omitempty"`
	BlockSize    int `yaml:"block_size,omitempty"`
}

// FittedValue is one fitted coefficient and its standard error.
type FittedValue struct {
	Name   string  `yaml:"name"`
	Value  float64 `yaml:"value"`
	StdErr float64 `yaml:"std_err"`
}
