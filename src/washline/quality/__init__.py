"""Great Expectations (GX Core 1.x) validation of staging slices.

The call is ``washline.quality.runner.validate_slice``; the runner's docstring
names the module that owns each part (settings, suites, slice SQL, views,
datasource, samples, results, run folders).
"""
