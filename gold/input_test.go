package gold
