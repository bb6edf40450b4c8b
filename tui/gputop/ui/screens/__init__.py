"""The app's screens: main, help, and the replay go-to dialog."""
