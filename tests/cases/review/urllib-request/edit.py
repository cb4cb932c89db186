from urllib.request import urlopen
urlopen("https://example.com")
