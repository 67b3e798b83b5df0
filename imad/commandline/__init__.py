"""What every command-line entry point shares, `imad …` and `python -m training.*` alike.

`imad.commandline.entry` holds the exit rule (typed errors → `error: …` and exit 2 or 3) and
`imad.commandline.calibration` the calibration flags and report that `imad calibrate` and
`python -m training.calibrate` both use. Neither `imad.cli` nor `training` owns them, so
`training` imports nothing from `imad.cli` (the sub-command modules sit above both).
"""
