import Sluice
print("sluice")
